//! From parsed flags to a [`RunPlan`]: every check of the command line that
//! needs no run directory, in one place, before anything is created. What a
//! mode makes of its flags is its own (`modes::Mode::resolve`); here, the
//! flags every run shares, and the rule that a flag the chosen mode does
//! not read is refused, naming the modes that do.

use super::args::{LauncherArg, RunArgs};
use crate::error::Refusal;
use crate::modes::{MODES, Mode, RunPlan, Shared, SharedArgs};
use crate::plan::Settings;
use clap::parser::ValueSource;
use std::path::PathBuf;

pub(super) fn resolve(args: RunArgs, matches: &clap::ArgMatches) -> Result<RunPlan, Refusal> {
    let mode = crate::modes::by_name(&args.mode)
        .ok_or_else(|| Refusal(format!("--mode {}: no such mode", args.mode)))?;
    not_read_by(mode, &args, matches)?;
    let spans = args.spans.clone();
    crate::plan::distinct_spans(&spans)?;
    if let Some(first) = spans.first().filter(|_| !mode.uses().contains(&Shared::Spans)) {
        return Err(spans_refused(first));
    }
    let keras = spans.iter().any(|t| matches!(t, protocol::SpanTarget::Preset(p) if p == "keras"));
    if args.keras_resident > 0 && !keras {
        return Err(Refusal(
            "--keras-resident times the resident steps of --span preset:keras, which is not given"
                .to_string(),
        ));
    }
    let slurm_only = [
        ("--partition", args.partition.is_some()),
        ("--time-limit", args.time_limit.is_some()),
        ("--srun-arg", !args.srun_args.is_empty()),
    ];
    let launcher = match args.launcher {
        LauncherArg::Local => {
            if let Some((flag, _)) = slurm_only.iter().find(|(_, given)| *given) {
                return Err(Refusal(format!("{flag} applies to --launcher slurm")));
            }
            crate::launch::Kind::Local
        }
        LauncherArg::Slurm => crate::launch::Kind::Slurm(crate::launch::SlurmOptions {
            partition: args.partition,
            time_limit: args.time_limit,
            extra: args.srun_args,
        }),
    };
    let listen = match (&launcher, args.listen) {
        (_, Some(addr)) => {
            // Refused now, before a run directory exists, not mid-run.
            std::net::TcpListener::bind(addr.as_str())
                .map_err(|e| Refusal(format!("--listen {addr}: cannot listen there: {e}")))?;
            Some(addr)
        }
        (crate::launch::Kind::Slurm(_), None) => Some("127.0.0.1:0".to_string()),
        (crate::launch::Kind::Local, None) => None,
    };
    let worker_bin = match args.worker_bin {
        Some(p) => p,
        None => default_worker_bin()?,
    };
    let shared_commands = args.commands.clone();
    let shared = SharedArgs {
        stages: args.stages,
        commands: args.commands,
        names: args.names,
        seed: args.seed,
        data: args.data.clone(),
        kill_at: args.kill_at.clone(),
        workers: args.workers.0.clone(),
        inputs: args.inputs.clone(),
        params: report::modes::params::ParamArgs {
            params: args.params.clone(),
            env_only: args.param_env_only,
            many: args.yes_many,
            seed: args.param_seed,
        },
    };
    // The mode's own checks and plan come last: a recipe run claims its
    // state directory, and a refused command line leaves nothing.
    let mode = mode.resolve(matches, &shared)?;
    if let Some(first) = spans.first().filter(|_| !mode.takes_spans()) {
        return Err(spans_refused(first));
    }
    let sample = match args.sample {
        None => None,
        Some(_) if !mode.takes_spans() => {
            return Err(Refusal(
                "--sample samples the Python of --command stages and --prepare programs, and this run has neither (built-in stages are not Python)"
                    .into(),
            ));
        }
        Some(rate_hz) => {
            // py-spy is looked for beside the program's python too.
            let prepare = matches
                .try_get_one::<String>("prepare")
                .ok()
                .flatten()
                .filter(|_| matches.value_source("prepare") == Some(ValueSource::CommandLine));
            let commands: Vec<String> =
                shared_commands.into_iter().chain(prepare.cloned()).collect();
            Some(crate::plan::Sampling { rate_hz, py_spy: crate::sampler::find(&commands)? })
        }
    };
    // Digested last: a refused command line reads no one's data.
    let run_dir = args.output.clone().unwrap_or_else(|| PathBuf::from("runs"));
    let inputs = host::inputs::resolve(&args.inputs, &run_dir)
        .map_err(|e| crate::error::Refusal(e.to_string()))?;
    // The largest count is the run's: its processes are the most at once.
    let workers = args.workers.0.iter().copied().max().unwrap_or(1);
    Ok(RunPlan {
        settings: Settings {
            isolation: args.isolation.unwrap_or(crate::plan::Isolation::Stage),
            workers,
            connect_timeout: args.connect_timeout,
            stage_timeout: args.stage_timeout,
            grace: args.grace,
            worker_bin,
            launcher,
            listen,
            output: args.output,
            data: args.data,
            quiet: args.quiet,
            kill_at: args.kill_at,
            leaks: args.leaks,
            sample_ms: args.sample_ms,
            keras_resident: args.keras_resident,
            no_provenance: args.no_provenance,
            sources: crate::plan::hash_sources(&args.sources)?,
            inputs,
            spans,
            stage_spans: Default::default(),
            sample,
            campaign_step: None,
        },
        mode,
    })
}

/// A flag of another mode's own, or a shared one this mode does not read,
/// refused, naming the modes that read it.
fn not_read_by(mode: &dyn Mode, args: &RunArgs, matches: &clap::ArgMatches) -> Result<(), Refusal> {
    let name = mode.name();
    for other in MODES.iter().filter(|m| m.name() != name) {
        for arg in other.args(clap::Command::new(other.name())).get_arguments() {
            if matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
                let flag = arg.get_long().unwrap_or_default();
                return Err(Refusal(format!(
                    "--{flag} applies to --mode {}; --mode {name} does not use it",
                    other.name()
                )));
            }
        }
    }
    let stages = match (args.stages.is_empty(), args.commands.is_empty(), args.names.is_empty()) {
        (false, _, _) => Some("--stage"),
        (true, false, _) => Some("--command"),
        (true, true, false) => Some("--name"),
        (true, true, true) => None,
    };
    let given = [
        (Shared::Stages, stages),
        (Shared::Seed, args.seed.map(|_| "--seed")),
        (Shared::Isolation, args.isolation.map(|_| "--isolation")),
        (Shared::Data, args.data.as_ref().map(|_| "--data")),
        (Shared::KillAt, args.kill_at.as_ref().map(|_| "--kill-at")),
        (Shared::Inputs, args.inputs.first().map(|_| "--inputs")),
        (Shared::Params, args.params.first().map(|_| "--param")),
    ];
    for (shared, flag) in given {
        if let Some(flag) = flag.filter(|_| !mode.uses().contains(&shared)) {
            return Err(Refusal(format!(
                "{flag} applies to {}; --mode {name} does not use it",
                shared.readers()
            )));
        }
    }
    let sweep = &args.workers.0;
    if sweep.len() > 1 && !mode.uses().contains(&Shared::Sweep) {
        return Err(Refusal(format!(
            "--workers {}: a list of counts (a workers sweep) applies to {}; --mode {name} takes one count",
            sweep.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            Shared::Sweep.readers(),
        )));
    }
    Ok(())
}

/// `--span` where nothing is Python.
fn spans_refused(first: &protocol::SpanTarget) -> Refusal {
    Refusal(format!(
        "--span {first} applies to --command stages and --prepare programs, and this run has neither (built-in stages are not Python)"
    ))
}

/// `worker` next to the running coordinator binary.
pub(super) fn default_worker_bin() -> Result<PathBuf, Refusal> {
    let me =
        std::env::current_exe().map_err(|e| Refusal(format!("cannot locate this program: {e}")))?;
    Ok(me.with_file_name("worker"))
}
