//! A user's own per-item preparation (`--prepare`): one long-lived program
//! per worker process, handed one item at a time over two pipes (see
//! docs/item-protocol.md).
//!
//! On the worker's first `PrepareItem` the program starts as `sh -c
//! COMMAND`, a child of the worker in its process tree (its cgroup, its
//! parent-death signal), with `STAGEBENCH_ITEMS_FD` (it reads items there)
//! and `STAGEBENCH_ANSWERS_FD` (it writes answers there) in its
//! environment, and `STAGEBENCH_SPANS` as a command gets. The time until it
//! writes `{"ready": true}` is its start-up: the worker's untimed setup of
//! that first item (`setup_s`), so an item's wall runs from handing it over
//! to its answer. Each item is one line `{"item": ID, "out": DIR}`; the
//! answer is `{"done": ID}` or `{"error": MESSAGE}`. The spans the program
//! wrote while it worked on an item become that item's figures and slices.
//!
//! The program outlives its items: the session keeps the `Server` (see `server`) across
//! assignments and measures each item's tree without killing it. On
//! `Finish` the worker closes the program's input; it must exit 0, and the
//! tree is then contained like a stage's (leaks named and killed).
//!
//! Nothing the program writes enters a message but what is checked here:
//! an `error`'s text goes to the worker's stderr (the user's terminal),
//! never to the coordinator, since it may name the item or a path.

mod answers;
mod server;

use super::{StageContext, StageError};
pub use answers::ProgramError;
use protocol::Figure;
use server::Server;
use std::time::Duration;

/// Longest answer line the worker reads (a program writing without a
/// newline cannot make it hold more).
pub use protocol::items::MAX_ANSWER;

/// A program's close: how it ended, its tree contained, the `--span`
/// targets it never matched, and its tree's I/O over its whole life.
pub struct Closed {
    pub result: Result<(), ProgramError>,
    pub contained: crate::tree::Contained,
    pub spans_not_found: Vec<String>,
    /// Targets refused or never called, over the program's life.
    pub span_warnings: Vec<String>,
    pub io: Option<protocol::Io>,
    pub runtime: protocol::Runtime,
    /// Its sampled stacks (`--sample`), written once it had exited.
    pub artifacts: Vec<protocol::Written>,
}

/// A worker's preparation program, if it started one, and the sampling of
/// its tree from its start to its close: an item is measured by the clock
/// alone (a few microseconds), the tree once for the program's life.
pub struct Items {
    server: Option<Server>,
    sampler: Option<crate::tree::Sampler>,
    /// The tree's I/O counters when the program was about to start.
    io_start: Option<crate::tree::io::Counters>,
    /// What the program ran on: read before it started, completed by what
    /// its Python helper said at exit.
    pub runtime: protocol::Runtime,
    sample_ms: u32,
}

impl Items {
    pub fn new(sample_ms: u32) -> Items {
        Items {
            server: None,
            sampler: None,
            io_start: None,
            runtime: protocol::Runtime::default(),
            sample_ms,
        }
    }

    /// Whether a program is running.
    pub fn running(&self) -> bool {
        self.server.is_some()
    }

    /// Closes the program (it must exit 0 once its input closes) and ends
    /// its tree: what is still alive leaked. Its sampler, if it had one,
    /// ends with it (its stacks go into `run_dir`), before its tree's CPU
    /// is read. None when no program ran.
    pub fn finish(&mut self, run_dir: &std::path::Path) -> Option<Closed> {
        let mut server = self.server.take()?;
        let sampling = server.sampling.take();
        let tag = server.tag.clone();
        let _ = server.spans.follow(true, |_, _| {});
        let spans_not_found = match &server.bootstrap {
            Some(b) => b.not_found(&server.spans.tally.matched()),
            None => Vec::new(),
        };
        server.spans.tally.settle();
        let span_warnings = server.spans.tally.warnings();
        let python = server.spans.tally.runtime.take();
        let mut result = server.close();
        let mut artifacts = Vec::new();
        if let Some(s) = sampling {
            match s.end(run_dir, &tag, result.is_ok()) {
                Ok(written) => artifacts.extend(written),
                Err(e) => result = result.and(Err(ProgramError::new(e.to_string()))),
            }
        }
        let sampler = self.sampler.take()?;
        let contained = crate::tree::contain(sampler);
        let io = crate::tree::io::between(self.io_start.take(), crate::tree::io::now());
        let mut runtime = std::mem::take(&mut self.runtime);
        if let Some(python) = python {
            python.fill(&mut runtime);
        }
        Some(Closed { result, contained, spans_not_found, span_warnings, io, runtime, artifacts })
    }

    /// Kills the program's tree and stops sampling it (after a failure).
    fn abort(&mut self) {
        if let Some(s) = self.server.take() {
            s.kill_and_reap();
        }
        if let Some(sampler) = self.sampler.take() {
            crate::tree::contain(sampler);
        }
    }
}

/// Runs one item, starting the program first if this worker has none.
pub(super) fn run(
    command: &str,
    id: &str,
    out: &str,
    ready_timeout_ms: u64,
    ctx: &mut StageContext<'_>,
) -> Result<Vec<Figure>, StageError> {
    if ctx.items.server.is_none() {
        ctx.items.sampler = Some(crate::tree::Sampler::start(ctx.items.sample_ms));
        ctx.items.io_start = crate::tree::io::now();
        match Server::start(command, ctx, Duration::from_millis(ready_timeout_ms)) {
            Ok(server) => ctx.items.server = Some(server),
            Err(e) => {
                ctx.items.abort();
                return Err(e);
            }
        }
        // The start-up is this item's untimed setup (`setup_s`).
        ctx.reporter.setup_done();
    }
    let server = ctx.items.server.as_mut().expect("started above");
    let out_dir = ctx.run_dir.join(out);
    let result = server.item(id, &out_dir.to_string_lossy(), &mut *ctx.reporter);
    if result.is_err() {
        // A program that failed an item, crashed or broke the protocol is
        // not trusted with another: its tree is ended with the stage.
        ctx.items.abort();
    }
    result
}
