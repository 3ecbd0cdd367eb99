//! The wire between the stagebench coordinator and its worker processes.
//!
//! Everything that crosses a process boundary is defined here: the messages
//! ([`ToWorker`], [`FromWorker`]), their framing ([`frame`]), the handshake
//! ([`Hello`], [`Token`], and what admits one: [`handshake`]), the stage vocabulary ([`Stage`]), the program's
//! build identity ([`program`]) and the exit codes of both binaries ([`exit`]).
//!
//! Invariant: this crate does no I/O beyond `Read`/`Write` (and, with the
//! `tokio` feature, their async twins), with one exception: [`stream`], a
//! worker's blocking connection to its coordinator over a Unix socket or TCP
//! (shared by `worker` and the tests' fake worker, so both connect the same
//! way). It knows nothing of processes or files; the framing and messages
//! are testable on in-memory buffers.

pub mod env;
#[cfg(any(test, feature = "fuzzing"))]
pub mod examples;
pub mod exit;
pub mod frame;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod handshake;
pub mod items;
mod messages;
pub mod program;
#[cfg(test)]
mod sources;
pub mod spans;
mod stage;
pub mod stream;

pub use messages::{
    Beside, Faults, Figure, FromWorker, Hello, Io, JobId, KillPoint, MAX_SLICES, Measurement,
    PROTOCOL_VERSION, Runtime, SampleRequest, Slice, SpanTarget, ToWorker, Token, TreeUsage,
    WorkerId, Written, host_sha256,
};
pub use spans::{CommandStage, SpanSummary};
pub use stage::{
    Definition, EpochInput, LocalPath, ModelStep, ResumePolicy, Stage, StageParseError, StateInput,
    StateStep, Word,
};
