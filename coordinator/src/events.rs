//! What a run reports while it goes on: supervisors and the run send
//! [`Event`]s, the progress printer shows them in the [`Style`] each phase
//! asks for. Nothing here prints or measures.

use protocol::{Measurement, WorkerId};

/// How a phase shows its progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// A line per finished job: few, long jobs.
    LinePerJob,
    /// A `done/total` counter of many short jobs, each one `unit` ("series",
    /// "items").
    Counter { unit: &'static str },
    /// Trials: a live line on a terminal, silent otherwise.
    Trials { warmup: u32, trials: u32 },
    /// A trials run's prerequisites: a live `done/total` counter on a
    /// terminal, silent otherwise (like the trials themselves).
    Prerequisite,
}

/// What supervisors report while they run (for progress display).
#[derive(Clone, Debug)]
pub(crate) enum Event {
    /// Sent by the run, not a supervisor: a phase of `jobs` jobs begins.
    PhaseStarted {
        key: String,
        jobs: usize,
        style: Style,
    },
    StageStarted {
        rank: WorkerId,
        key: String,
    },
    Progress {
        key: String,
        done: u64,
        total: u64,
    },
    StageFinished {
        rank: WorkerId,
        key: String,
        measurement: Box<Measurement>,
    },
    /// A phase of items, in place of its jobs' `StageStarted` and
    /// `StageFinished`: `done` of its jobs ended (sent now and then).
    Counted {
        done: usize,
    },
}
