//! stagebench's evidence as a library: the typed records of a run
//! directory (`declaration.json`, `environment.json`, `report.json`,
//! `failure.json`, `jobs.jsonl.gz`) and everything that only reads or
//! writes them. It never spawns a process and knows nothing of how the
//! figures were measured; the coordinator writes through it. See
//! ARCHITECTURE.md.
//!
//! Modules are listed by floor, lowest first: each uses only modules listed
//! above it (`scripts/check-floors.py` holds `.ci/run` to this order).

// Floor 0: vocabulary; no I/O beyond the clock.
pub mod doc;
pub mod fmt;
pub mod stats;
// Floor 1: the run directory and its records; directories walked into manifests.
pub mod inputs;
pub mod manifest;
pub mod rundir;
// Floor 2: chart primitives.
pub mod chart;
// Floor 3: what each mode records and shows, and the report that holds it.
pub mod modes;

// Floor 4: a run's derived files (summary.md, plots, exports, the trace).
pub mod render;
// Floor 5: a campaign's evidence.
pub mod campaign;
// Floor 6: every binding of a run or campaign directory.
pub mod verify;
// Floor 7: the run directories below a directory, found.
pub mod runs_below;
// Floor 8: two verified runs or campaigns compared.
pub mod compare;
// Floor 9: a history of runs, read as compare reads two; a bisection's probes, read so too.
pub mod bisect;
pub mod history;
// Floor 10: a gate's interleaved runs, judged in pairs (through bisect's reading of a run).
pub mod gate;
// Floor 11: runs listed, each with its definition's last change.
pub mod dashboard;

pub mod schema;

pub use modes::{Report, Section};
