//! `--mode cold-prep`: verify the dataset, prepare every training series'
//! features into a new cache with one worker process, again with N worker
//! processes (the coordinator hands the next-largest series to whichever
//! worker is free), verify again, and prove both caches identical.
//!
//! Each cache gets a `manifest.json` (written by the coordinator as soon as
//! the phase ends, after re-hashing every file the workers reported). The
//! report binds the two manifests rather than listing per-series files, so
//! it names no series. With `--rounds R` the comparison runs R times in
//! alternating order ([`rounds`]).
//!
//! With `--prepare CMD --items FILE` ([`items`]) the phases hand a team's
//! own items to its own program instead, with the same dispatcher, rounds,
//! sweep and figures; their output directories are sealed by manifests
//! the coordinator makes by walking them, and must be identical.

mod assemble;
pub(crate) mod items;
mod phases;
pub(crate) mod rounds;
mod scan;
pub(crate) mod storage;

pub(crate) use phases::{Plan, prepare};
use report::modes::cold_prep::{NAME, Section, sweep, warnings};

use super::preparation::side;
use super::{Context, PhaseOutcome, Planned, Prepared, Records};
use crate::error::RunError;
use report::modes::preparation::{MANIFEST, Names};

/// The mode, as the registry lists it.
pub(crate) struct ColdPrep;
pub(crate) const MODE: ColdPrep = ColdPrep;

// The flags only cold-prep reads. (A doc comment here would be the
// whole command's about: clap takes a flattened group's.)
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "Cold-prep mode")]
pub(crate) struct Args {
    /// Serial-against-parallel comparisons, serial first in odd rounds and
    /// parallel first in even ones; the speedup is the median over rounds
    /// with its interval (1 to 1000). [default: 3]
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: Option<u32>,
    /// Your own per-item preparation program, instead of the recipe's:
    /// started with `sh -c` once per worker process, it is handed the items
    /// of --items one at a time (see docs/item-protocol.md; in Python,
    /// `stagebench.serve`).
    #[arg(long, value_name = "CMD ARGS")]
    prepare: Option<String>,
    /// With --prepare: the items, one per line, `ID` or `ID<TAB>WEIGHT`
    /// (largest weight first). Ids never enter the evidence.
    #[arg(long, value_name = "FILE")]
    items: Option<std::path::PathBuf>,
    /// With --prepare: fail the run when one item takes longer than this
    /// many seconds from its hand-over to its answer (a program that hangs,
    /// or closes its answers but stays alive, would wait forever).
    /// [default: off]
    #[arg(long, value_name = "SECS", value_parser = crate::plan::positive_secs)]
    item_timeout: Option<std::time::Duration>,
    /// With --prepare: how many items each worker holds beyond the one its
    /// program works on, so the next is already there when an answer
    /// leaves (the program still gets one item at a time). 0 hands an
    /// item over only after the last one's answer. [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=64))]
    prefetch: Option<u16>,
    /// `cold` drops the preparation's inputs (the training series' files,
    /// or --inputs) from the page cache before each preparation phase and
    /// round (posix_fadvise, no root needed) and warns when a phase was
    /// still served from it; `as-is` leaves the page cache alone.
    /// [default: as-is]
    #[arg(long, value_name = "MODE", value_enum)]
    os_cache: Option<storage::OsCache>,
}

impl super::Mode for ColdPrep {
    mode_basics!(NAME);
    fn about(&self) -> &'static str {
        "Cold feature-cache preparation (or your own, with --prepare), serial and N-process side by side"
    }
    fn uses(&self) -> &'static [super::Shared] {
        use super::Shared::*;
        &[Data, Sweep, Spans, Inputs, Params]
    }
    fn args(&self, cmd: clap::Command) -> clap::Command {
        <Args as clap::Args>::augment_args(cmd)
    }
    fn repeats(&self) -> Option<(&'static str, u32)> {
        Some(("rounds", DEFAULT_ROUNDS))
    }
    fn resolve(
        &self,
        own: &clap::ArgMatches,
        shared: &super::SharedArgs,
    ) -> Result<Box<dyn Planned>, crate::error::Refusal> {
        let own: Args = super::own_args(own)?;
        let items = items::resolve(&own, shared)?;
        Ok(Box::new(Plan {
            os_cache: own.os_cache.unwrap_or_default(),
            rounds: own.rounds.unwrap_or(DEFAULT_ROUNDS),
            counts: shared.workers.clone(),
            scan: phases::scan(shared, items.as_ref())?,
            items,
        }))
    }
}

impl Planned for Plan {
    plan_basics!(NAME);

    fn takes_spans(&self) -> bool {
        self.items.is_some()
    }

    fn jobs_apart(&self) -> bool {
        true
    }

    fn prepare(&self, settings: &crate::plan::Settings) -> Result<Prepared, RunError> {
        prepare(settings, self)
    }

    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        assemble::assemble(cx, self, outcomes, records).map(super::Section::from)
    }
}

/// Rounds when `--rounds` is not given: enough for a median and an
/// interval, and both orders, in a few seconds on the built-in cohort.
pub(crate) const DEFAULT_ROUNDS: u32 = 3;
