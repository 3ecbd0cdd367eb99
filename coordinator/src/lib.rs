//! The stagebench coordinator: plans a run, launches and supervises isolated
//! worker processes, and writes hash-bound evidence. See ARCHITECTURE.md.
//!
//! Modules are listed by floor, lowest first: each uses only modules listed
//! above it (`scripts/check-floors.py` holds `.ci/run` to this order).

// Floor 0: vocabulary; no I/O beyond the clock and /proc.
mod error;
mod events;
mod fmt;
mod interrupt;
mod stats;
mod timestamp;
// Floor 1: the run directory and its evidence records; locks on directories runs share;
// inputs dropped from the page cache; directories walked into manifests, and `--inputs`.
mod dirlock;
mod pagecache;
mod rundir;
// (manifest: a directory's files, hashed)
mod manifest;
// (inputs: `--inputs`, digested before a run and checked after)
mod inputs;
// Floor 2: worker processes, connections, supervision, one phase's dispatch.
mod process;
// (gate admits connections; launch starts workers and binds where they connect)
mod gate;
// (launch)
mod launch;
// (supervisor: one worker's life)
mod supervisor;
// (dispatch: one phase over N supervisors)
mod dispatch;
// Floor 3: what a person sees, chart primitives, what a run will do, which data.
mod chart;
mod dataset;
mod plan;
mod progress;
// Floor 4: the modes (plans, phases, report sections), a run's derived files, one run.
mod modes;
// (render: summary.md, plots and exports of a run's report)
mod render;
// (run: one run start to finish)
mod run;
// Floor 5: above runs: campaigns, verification, comparison, the dashboard.
mod campaign;
// (verify: every binding of a run or campaign directory)
pub mod verify;
// (compare: two verified runs)
mod compare;
// (dashboard)
mod dashboard;
// Floor 6: the command line.
pub mod cli;
