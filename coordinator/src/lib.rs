//! The stagebench coordinator: plans a run, launches and supervises isolated
//! worker processes, and writes hash-bound evidence. See ARCHITECTURE.md.
//!
//! Modules are listed by floor, lowest first: each uses only those above it
//! in this list (`scripts/check-floors.py` holds `.ci/run` to it).

// Floor 0: vocabulary, no I/O beyond the clock and /proc.
pub mod error;
pub mod events;
pub mod fmt;
pub mod interrupt;
pub mod stats;
pub mod timestamp;
// Floor 1: the run directory and its evidence records.
pub mod rundir;
// Floor 2: processes, connections, supervision.
pub mod dispatch;
pub mod gate;
pub mod launch;
pub mod process;
pub mod supervisor;
// Floor 3: what a person sees; what a run will do; which data it reads.
pub mod chart;
pub mod dataset;
pub mod plan;
pub mod progress;
// Floor 4: the modes, their derived files, one run.
pub mod modes;
pub mod render;
pub mod run;
// Floor 5: above runs.
pub mod campaign;
pub mod compare;
pub mod dashboard;
pub mod verify;
// Floor 6: the command line.
pub mod cli;
