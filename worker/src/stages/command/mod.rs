//! Anyone's command as a stage (`sh -c LINE`, or a program with its
//! arguments, working directory and environment), measured with its whole
//! process tree (see `measure::self_usage`), its exit status checked.
//!
//! The command inherits the worker's stderr (and, for a command line, its
//! working directory), passed on through a pipe whose end is kept when
//! that stderr is not a terminal (see [`tail`]); its stdout
//! is discarded (so a chatty command's terminal does not enter its timing).
//! It gets none of stagebench's launch variables, and it dies with the
//! worker: it stays in the worker's process group (which the coordinator
//! signals) and has a parent-death signal of its own.
//!
//! It does get `STAGEBENCH_SPANS`, a fresh file to which it may append its
//! own inner spans and its progress (see [`super::spans`]); the spans become
//! the stage's figures. While the command runs the worker follows that
//! file (see [`follow`]): progress goes to the coordinator, and a declared
//! kill point is checked against it.

mod follow;
mod tail;

pub(super) use follow::{exited, pidfd_open, sleep_on};

use super::spans::SpansFile;
use super::{StageContext, StageError, figure};
use protocol::Figure;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

pub(super) fn run(mut cmd: Command, ctx: &mut StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    let mut spans = SpansFile::create(&ctx.run_dir, &ctx.job_tag)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    for var in protocol::env::LAUNCH {
        cmd.env_remove(var);
    }
    cmd.env(protocol::env::SPANS, spans.path());
    // A stage that will be killed writes every span at its end, not once
    // a second: what it finished before the kill is what a campaign reads
    // a resume's repeats against (and a kill point's span is among them).
    if ctx.kill.is_some() {
        cmd.env(super::spans::EAGER, "*");
    }
    let bootstrap = super::autospan::Bootstrap::create(&ctx.run_dir, &ctx.job_tag, ctx.spans)?;
    if let Some(b) = &bootstrap {
        b.apply(&mut cmd);
    }
    // SAFETY: prctl and the raw signal calls are async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Into the stage's cgroup, if it has one (see `tree`), so the
            // kernel charges the whole tree there.
            crate::tree::enter_stage_cgroup();
            // The signal state the worker was started with, not its own.
            crate::child_signals::restore_in_child()?;
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    let cwd = match cmd.get_current_dir() {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    // Descendants to look for from now on, and the stage's memory cgroup,
    // which the command joins before it starts.
    crate::tree::will_start_processes();
    let spawned = super::spans::monotonic_now();
    let stderr = tail::attach(&mut cmd);
    let child =
        cmd.spawn().map_err(|e| StageError::Failed(format!("cannot start {program}: {e}")))?;
    // The stderr pipe's write end is the command's tree's alone now.
    drop(cmd);
    let pid = child.id() as i32;
    if let Some(req) = ctx.sample {
        ctx.sampling = Some(super::sampled::attach(req, pid, cwd).inspect_err(|_| {
            crate::tree::kill_tree();
            let _ = crate::tree::wait_child(pid);
        })?);
    }
    let watched = follow::until_exit(pid, &mut spans, ctx.kill.as_ref(), ctx.reporter);
    if let follow::Ended::Killed(_) = &watched {
        crate::tree::kill_tree();
    }
    // Waited for here (not by std) so its own peak joins the tree's sum.
    let status = crate::tree::wait_child(pid)
        .map(std::process::ExitStatus::from_raw)
        .map_err(|e| StageError::Failed(format!("waiting for {program}: {e}")))?;
    let (bad_line, unreached) = match watched {
        follow::Ended::Killed(at) => {
            // What it got done before the kill: the campaign reads which
            // calls a resume repeats from it.
            super::spans::place(spans.done_so_far(), ctx.reporter);
            return Err(StageError::KilledAtPoint(at));
        }
        follow::Ended::Exited { bad_line, unreached } => (bad_line, unreached),
    };
    if status.code() != Some(0) {
        // What it got done before it failed, as slices of the stage.
        super::spans::place(spans.done_so_far(), ctx.reporter);
        if let Some(text) = stderr.and_then(tail::Tail::text) {
            ctx.reporter.stderr_tail(text);
        }
        return Err(StageError::Failed(match (status.code(), status.signal()) {
            (Some(code), _) => exited_with(code),
            (None, Some(sig)) => format!("the command was killed by signal {sig}"),
            _ => "the command ended abnormally".into(),
        }));
    }
    if let Some(e) = bad_line {
        return Err(StageError::Failed(e));
    }
    let mut figures = vec![figure("exit_code", 0.0)];
    let said = spans.finish()?;
    if let Some(b) = &bootstrap {
        ctx.reporter.spans_not_found(b.not_found(&said.wrapped));
    }
    let preset = super::input_wait::derived(ctx.spans, &said.spans);
    let mut warnings = said.warnings;
    warnings.extend(super::input_wait::unknown(ctx.spans, &preset));
    figures.extend(preset);
    ctx.reporter.spans(said.spans, warnings);
    ctx.reporter.command_stages(super::spans::command_stages(&said.stages, spawned));
    // A stage reset its process's high-water mark: its peaks before
    // still count in the tree's sum of peaks.
    for l in &said.stages {
        crate::tree::raise_peak(l.pid as i32, l.hwm.max(l.peak));
    }
    if let Some(runtime) = said.runtime {
        ctx.reporter.python_runtime(runtime);
    }
    figures.extend(said.figures);
    super::spans::place(said.timed, ctx.reporter);
    match unreached {
        Some(why) => Err(StageError::Failed(why)),
        None => Ok(figures),
    }
}

/// A command's non-zero exit in words. `sh -c` that did not exec its
/// command reports a child killed by signal N as status 128 + N: said so,
/// beside the status, so a SIGKILL does not read as the program's own 137.
fn exited_with(code: i32) -> String {
    let signal = (129..=128 + 64)
        .contains(&code)
        .then(|| nix::sys::signal::Signal::try_from(code - 128).ok())
        .flatten();
    match signal {
        Some(sig) => format!(
            "the command exited with status {code} (128 + {}: a shell's report of a process killed by {sig})",
            code - 128
        ),
        None => format!("the command exited with status {code}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shells_report_of_a_signal_is_said_beside_the_status() {
        assert_eq!(super::exited_with(1), "the command exited with status 1");
        assert_eq!(
            super::exited_with(137),
            "the command exited with status 137 (128 + 9: a shell's report of a process killed by SIGKILL)"
        );
        assert_eq!(super::exited_with(255), "the command exited with status 255");
    }
}
