//! From parsed flags to a [`RunPlan`]: every check of the command line that
//! needs no run directory, in one place, before anything is created.

use super::args::{LauncherArg, PolicyArg, RunArgs};
use crate::error::Refusal;
use crate::modes::{Planned, RunPlan};
use crate::plan::{self, Mode, Settings};
use protocol::Stage;
use std::path::PathBuf;

pub(super) fn resolve(args: RunArgs) -> Result<RunPlan, Refusal> {
    let recipe_mode = matches!(args.mode, Mode::ColdPrep | Mode::Profile | Mode::Recipe);
    if args.mode != Mode::Recipe {
        let recipe_only = [
            ("--state", args.state.is_some()),
            ("--resume-policy", args.resume_policy.is_some()),
            ("--epochs", args.epochs.is_some()),
        ];
        if let Some((flag, _)) = recipe_only.iter().find(|(_, g)| *g) {
            return Err(format!("{flag} applies to --mode recipe").into());
        }
    } else if args.state.is_none() {
        return Err("--mode recipe needs --state DIR".into());
    }
    // A flag a mode would ignore is refused, naming the modes that use it.
    let used_by: [(&str, bool, &[Mode]); 5] = [
        ("--trials", args.trials.is_some(), &[Mode::Trials]),
        ("--rounds", args.rounds.is_some(), &[Mode::ColdPrep]),
        ("--warmup", args.warmup.is_some(), &[Mode::Trials]),
        ("--seed", args.seed.is_some(), &[Mode::Trials, Mode::Profile, Mode::Recipe]),
        ("--isolation", args.isolation.is_some(), &[Mode::Diagnostic, Mode::Profile, Mode::Recipe]),
    ];
    for (flag, given, modes) in used_by {
        if given && !modes.contains(&args.mode) {
            let names: Vec<String> =
                modes.iter().map(|m| format!("--mode {}", m.as_str())).collect();
            return Err(format!(
                "{flag} applies to {}; --mode {} does not use it",
                names.join(", "),
                args.mode.as_str()
            )
            .into());
        }
    }
    let items = resolve_items(&args)?;
    let sweep = args.workers.0.clone();
    if sweep.len() > 1 && args.mode != Mode::ColdPrep {
        return Err(format!(
            "--workers {}: a list of counts (a workers sweep) applies to --mode cold-prep; --mode {} takes one count",
            sweep.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            args.mode.as_str()
        ).into());
    }
    // The largest count is the run's: its processes are the most at once.
    let workers = sweep.iter().copied().max().unwrap_or(1);
    if args.data.is_some() && args.mode == Mode::Diagnostic {
        return Err("--data applies to --mode cold-prep, profile, recipe and to recipe stages in --mode trials; --mode diagnostic reads no dataset".into());
    }
    let seed = args.seed.unwrap_or(0);
    if recipe_mode && !(args.stages.is_empty() && args.commands.is_empty()) {
        return Err(format!(
            "--stage and --command apply to --mode diagnostic and --mode trials, not {}",
            args.mode.as_str()
        )
        .into());
    }
    if args.names.len() > args.commands.len() {
        return Err(format!(
            "{} --name given for {} --command",
            args.names.len(),
            args.commands.len()
        )
        .into());
    }
    let spellings: Vec<String> = if args.stages.is_empty() && args.commands.is_empty() {
        plan::DEFAULT_DIAGNOSTIC_STAGES.iter().map(|s| s.to_string()).collect()
    } else {
        args.stages
    };
    let mut stages = spellings
        .iter()
        .map(|s| match crate::modes::profile::recipe_stage(s, seed) {
            Some(_) if args.mode != Mode::Trials => Err(format!(
                "--stage {s}: recipe stages repeat in --mode trials (--mode profile runs them all once)"
            )),
            Some(stage) => Ok(stage),
            None => s.parse().map_err(|e: protocol::StageParseError| {
                // Name every stage this mode takes, the recipe's too.
                match (&e, args.mode) {
                    (protocol::StageParseError::Unknown(_), Mode::Trials) => format!(
                        "--stage {s}: {e}; or a recipe stage: {}",
                        crate::modes::profile::trial_stage_names().collect::<Vec<_>>().join(", ")
                    ),
                    (protocol::StageParseError::Unknown(_), _) => format!(
                        "--stage {s}: {e}; the recipe's stages ({}) repeat in --mode trials, and cold-prep, profile and recipe run their own",
                        crate::modes::profile::trial_stage_names().collect::<Vec<_>>().join(", ")
                    ),
                    _ => format!("--stage {s}: {e}"),
                }
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, line) in args.commands.iter().enumerate() {
        if line.trim().is_empty() {
            return Err("--command needs a command line".into());
        }
        let name = args.names.get(i).cloned().unwrap_or_else(|| "command".into());
        if !plan::is_label(&name) {
            return Err(format!(
                "--name {name:?} must be 1-64 of A-Z a-z 0-9 _ and - (it names the stage in tables, plots and traces)"
            )
            .into());
        }
        stages.push(protocol::Stage::Command { name, line: line.clone() });
    }
    let stages = plan::keyed(stages);
    let recipe_stages = stages.iter().any(|s| crate::modes::profile::recipe_name(&s.stage));
    if args.mode == Mode::Trials && !recipe_stages {
        for (flag, given) in [("--data", args.data.is_some()), ("--seed", args.seed.is_some())] {
            if given {
                return Err(format!(
                    "{flag} applies to the recipe's stages in --mode trials, and none of these stages is one"
                ).into());
            }
        }
    }
    let slurm_only = [
        ("--partition", args.partition.is_some()),
        ("--time-limit", args.time_limit.is_some()),
        ("--srun-arg", !args.srun_args.is_empty()),
    ];
    let launcher = match args.launcher {
        LauncherArg::Local => {
            if let Some((flag, _)) = slurm_only.iter().find(|(_, given)| *given) {
                return Err(format!("{flag} applies to --launcher slurm").into());
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
                .map_err(|e| format!("--listen {addr}: cannot listen there: {e}"))?;
            Some(addr)
        }
        (crate::launch::Kind::Slurm(_), None) => Some("127.0.0.1:0".to_string()),
        (crate::launch::Kind::Local, None) => None,
    };
    if let Some(k) = &args.kill_at {
        // Only these act on a kill point: the recipe's stages report their
        // progress, and a command's worker follows its spans file.
        let known: Vec<String> = match args.mode {
            Mode::Recipe => crate::modes::recipe::keys().map(str::to_string).collect(),
            Mode::Diagnostic => stages
                .iter()
                .filter(|s| matches!(s.stage, Stage::Command { .. } | Stage::Exec { .. }))
                .map(|s| s.key.clone())
                .collect(),
            other => {
                return Err(format!(
                    "--kill-at applies to --mode recipe and to the --command stages of --mode diagnostic, not --mode {}",
                    other.as_str()
                ).into());
            }
        };
        if known.is_empty() {
            return Err(format!(
                "--kill-at {k}: no stage of this run can be killed at a point (--mode diagnostic kills --command stages only)"
            ).into());
        }
        if !known.contains(&k.stage) {
            return Err(format!(
                "--kill-at {}: no stage of this run is called that (stages that can be killed: {})",
                k.stage,
                known.join(", ")
            )
            .into());
        }
        let stage = stages.iter().find(|s| s.key == k.stage).map(|s| &s.stage);
        let command = matches!(stage, Some(Stage::Command { .. } | Stage::Exec { .. }));
        if k.needs_a_command() && !command {
            return Err(
                format!("--kill-at {k}: span: and after: points apply to a command stage").into()
            );
        }
    }
    let spans = args.spans.clone();
    let commands = stages.iter().any(|s| matches!(s.stage, Stage::Command { .. }));
    if !spans.is_empty() && !commands && args.prepare.is_none() {
        return Err(format!(
            "--span {} applies to --command stages and --prepare programs, and this run has neither (built-in stages are not Python)",
            spans[0]
        )
        .into());
    }
    let worker_bin = match args.worker_bin {
        Some(p) => p,
        None => default_worker_bin()?,
    };
    let mode: Box<dyn Planned> = match args.mode {
        Mode::Diagnostic => Box::new(crate::modes::diagnostic::Plan { stages }),
        Mode::ColdPrep => Box::new(crate::modes::cold_prep::Plan {
            rounds: args.rounds.unwrap_or(crate::modes::cold_prep::DEFAULT_ROUNDS),
            counts: sweep,
            items,
        }),
        Mode::Trials => Box::new(crate::modes::trials::Plan {
            stages,
            trials: args.trials.unwrap_or(10),
            warmup: args.warmup.unwrap_or(1),
            seed,
        }),
        Mode::Profile => Box::new(crate::modes::profile::Plan { seed }),
        Mode::Recipe => {
            // Claimed (created, marked) last: a refused command line leaves nothing.
            let dir = args.state.as_deref().expect("checked above: recipe has --state");
            Box::new(crate::modes::recipe::Plan {
                state: recipe::state::claim(dir).map_err(|e| Refusal(e.to_string()))?,
                policy: match args.resume_policy.unwrap_or(PolicyArg::Load) {
                    PolicyArg::Load => protocol::ResumePolicy::Load,
                    PolicyArg::Recompute => protocol::ResumePolicy::Recompute,
                },
                epochs: args.epochs.unwrap_or(1),
                seed,
            })
        }
    };
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
            spans,
            stage_spans: Default::default(),
        },
        mode,
    })
}

/// `--prepare CMD --items FILE [--inputs DIR]`: read and checked now,
/// before anything is created.
fn resolve_items(args: &RunArgs) -> Result<Option<crate::modes::cold_prep::items::Items>, Refusal> {
    use crate::modes::cold_prep::items;
    let given = [
        ("--prepare", args.prepare.is_some()),
        ("--items", args.items.is_some()),
        ("--inputs", args.inputs.is_some()),
    ];
    if args.mode != Mode::ColdPrep {
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(format!(
                "{flag} applies to --mode cold-prep; --mode {} does not use it",
                args.mode.as_str()
            )
            .into());
        }
        return Ok(None);
    }
    let (command, path) = match (&args.prepare, &args.items) {
        (None, None) if args.inputs.is_some() => {
            return Err("--inputs applies to --prepare (your own preparation)".into());
        }
        (None, None) => return Ok(None),
        (Some(_), None) => return Err("--prepare needs --items FILE (one item per line)".into()),
        (None, Some(_)) => {
            return Err(
                "--items needs --prepare 'CMD ARGS' (the program that prepares an item)".into()
            );
        }
        (Some(c), Some(p)) => (c, p),
    };
    if command.trim().is_empty() {
        return Err("--prepare needs a command line".into());
    }
    if args.data.is_some() {
        return Err("--data is the recipe's dataset; with --prepare your program reads its own inputs (give --inputs DIR to have them checked)".into());
    }
    let (list, sha256) = items::read(path).map_err(|e| Refusal(e.to_string()))?;
    let inputs = match &args.inputs {
        None => None,
        Some(dir) if !dir.is_dir() => {
            return Err(format!("--inputs {}: not a directory", dir.display()).into());
        }
        Some(dir) => {
            let before = items::digest_inputs(dir).map_err(|why| {
                Refusal(format!("--inputs {}: cannot be digested: {why}", dir.display()))
            })?;
            Some((dir.clone(), before))
        }
    };
    Ok(Some(items::Items { command: command.clone(), list, sha256, inputs }))
}

/// `worker` next to the running coordinator binary.
pub(super) fn default_worker_bin() -> Result<PathBuf, Refusal> {
    let me = std::env::current_exe().map_err(|e| format!("cannot locate this program: {e}"))?;
    Ok(me.with_file_name("worker"))
}
