//! The stagebench coordinator: plans a run, launches and supervises isolated
//! worker processes, and writes hash-bound evidence. See ARCHITECTURE.md.

pub mod campaign;
pub mod cli;
pub mod compare;
pub mod dashboard;
pub mod dataset;
pub mod dispatch;
pub mod gate;
pub mod launch;
pub mod modes;
pub mod plan;
pub mod process;
pub mod progress;
pub mod render;
pub mod run;
pub mod rundir;
pub mod stats;
pub mod supervisor;
pub mod timestamp;
