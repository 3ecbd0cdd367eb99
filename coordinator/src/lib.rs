//! The stagebench coordinator: plans a run, launches and supervises isolated
//! worker processes, and writes hash-bound evidence. See ARCHITECTURE.md.
//!
//! Modules are listed by floor, lowest first: each uses only modules listed
//! above it (`scripts/check-floors.py` holds `.ci/run` to this order).

// The evidence's records, statistics, charts and renderings live in the
// `report` crate; the coordinator writes through it and names it so
// (`report::rundir`, never a local alias).

// Floor 0: vocabulary; no I/O beyond the clock and /proc.
mod error;
mod events;
mod kill_points;
// (What a run reads of this host: its machine record, its page cache, locks on its
// directories, `--inputs` and the items file, is the `host` crate's.)
// Floor 2: worker processes, connections, supervision, one phase's dispatch.
mod process;
// (admission lets connections in; launch starts workers and binds where they connect)
mod admission;
// (launch)
mod launch;
// (supervisor: one worker's life)
mod supervisor;
// (dispatch: one phase over N supervisors)
mod dispatch;
// (sampler: `--sample`'s py-spy, found and checked before anything runs)
mod sampler;
// Floor 3: what a run will do, what a person sees while it runs.
mod plan;
mod progress;
// Floor 4: the modes (plans, phases, the sections they assemble), one run.
mod modes;
// (run: one run start to finish)
mod run;
// Floor 5: above runs: campaigns, and bisections (verification, comparison, history and
// the dashboard are the report crate's, which the command line calls).
mod campaign;
// (bisect: commits probed with runs of this coordinator, in their own worktrees)
mod bisect;
// Floor 6: the command line.
pub mod cli;
