//! The stagebench coordinator: plans a run, launches and supervises isolated
//! worker processes, and writes hash-bound evidence. See ARCHITECTURE.md.
//!
//! Modules are listed by floor, lowest first: each uses only modules listed
//! above it (`scripts/check-floors.py` holds `.ci/run` to this order).

// Floor 0: vocabulary; no I/O beyond the clock and /proc.
pub mod error;
pub mod events;
pub mod fmt;
pub mod interrupt;
pub mod stats;
pub mod timestamp;
// Floor 1: the run directory and its evidence records.
pub mod rundir;
// Floor 2: worker processes, connections, supervision, one phase's dispatch.
pub mod process;
// (gate admits connections; launch starts workers and binds where they connect)
pub mod gate;
// (launch)
pub mod launch;
// (supervisor: one worker's life)
pub mod supervisor;
// (dispatch: one phase over N supervisors)
pub mod dispatch;
// Floor 3: what a person sees, chart primitives, what a run will do, which data.
pub mod chart;
pub mod dataset;
pub mod plan;
pub mod progress;
// Floor 4: the modes (plans, phases, report sections), a run's derived files, one run.
pub mod modes;
// (render: summary.md, plots and exports of a run's report)
pub mod render;
// (run: one run start to finish)
pub mod run;
// Floor 5: above runs: campaigns, verification, comparison, the dashboard.
pub mod campaign;
// (verify: every binding of a run or campaign directory)
pub mod verify;
// (compare: two verified runs)
pub mod compare;
// (dashboard)
pub mod dashboard;
// Floor 6: the command line.
pub mod cli;
