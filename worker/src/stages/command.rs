//! Anyone's command as a stage (`sh -c LINE`, or a program with its
//! arguments, working directory and environment), measured with its whole
//! process tree (see `measure::self_usage`), its exit status checked.
//!
//! The command inherits the worker's stderr (and, for a command line, its
//! working directory); its stdout
//! is discarded (so a chatty command's terminal does not enter its timing).
//! It gets none of stagebench's launch variables, and it dies with the
//! worker: it stays in the worker's process group (which the coordinator
//! signals) and has a parent-death signal of its own.
//!
//! It does get `STAGEBENCH_SPANS`, a fresh file to which it may append its
//! own inner spans (see [`super::spans`]); they become the stage's figures.

use super::spans::SpansFile;
use super::{StageContext, StageError, figure};
use protocol::Figure;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

pub(super) fn run(mut cmd: Command, ctx: &StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    let spans = SpansFile::create(&ctx.run_dir, &ctx.job_tag)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    for var in protocol::env::LAUNCH {
        cmd.env_remove(var);
    }
    cmd.env(protocol::env::SPANS, spans.path());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Into the stage's cgroup, if it has one (see `tree`), so the
            // kernel charges the whole tree there.
            crate::tree::enter_stage_cgroup();
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    // Descendants to look for from now on, and the stage's memory cgroup,
    // which the command joins before it starts.
    crate::tree::will_start_processes();
    let child =
        cmd.spawn().map_err(|e| StageError::Failed(format!("cannot start {program}: {e}")))?;
    // Waited for here (not by std) so its own peak joins the tree's sum.
    let status = crate::tree::wait_child(child.id() as i32)
        .map(std::process::ExitStatus::from_raw)
        .map_err(|e| StageError::Failed(format!("waiting for {program}: {e}")))?;
    match (status.code(), status.signal()) {
        (Some(0), _) => {
            let mut figures = vec![figure("exit_code", 0.0)];
            figures.extend(spans.finish()?);
            Ok(figures)
        }
        (Some(code), _) => {
            Err(StageError::Failed(format!("the command exited with status {code}")))
        }
        (None, Some(sig)) => {
            Err(StageError::Failed(format!("the command was killed by signal {sig}")))
        }
        _ => Err(StageError::Failed("the command ended abnormally".into())),
    }
}
