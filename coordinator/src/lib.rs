//! The stagebench coordinator: plans a run, launches and supervises isolated
//! worker processes, and writes hash-bound evidence. See ARCHITECTURE.md.

pub mod cli;
pub mod dispatch;
pub mod gate;
pub mod plan;
pub mod process;
pub mod progress;
pub mod run;
pub mod rundir;
pub mod supervisor;
pub mod timestamp;
