//! What `--mode cold-prep` adds to the report: the serial and N-process
//! preparations, the speedup with its rounds and interval, a workers
//! sweep, storage and the warnings that make a speedup misleading; and how
//! it shows itself (`render`, `plots`).

pub mod items;
mod plots;
mod render;
pub mod rounds;
pub mod storage;
pub mod sweep;
pub mod warnings;

use crate::rundir::report::{Counts, PrepSide};
use serde::{Deserialize, Serialize};

/// The mode's name.
pub const NAME: &str = "cold-prep";

/// What cold-prep adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ColdPrepSection")]
pub struct Section {
    /// Aggregate counts of the training partition (the recipe's preparation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// A user's own preparation (`--prepare`): its items and inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<items::Summary>,
    /// The one-process preparation (round 1's, with rounds).
    pub serial: PrepSide,
    /// The N-process preparation.
    pub parallel: PrepSide,
    /// Serial wall / parallel wall; with rounds, the median over rounds.
    pub speedup: f64,
    /// With 6 rounds or more: the percentile bootstrap 95% interval of that
    /// median (fewer rounds have no 95% interval; see `speedup_interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_ci95: Option<[f64; 2]>,
    /// With rounds: the median's interval with its coverage, the bootstrap
    /// one from 6 rounds, the range of the rounds below that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_interval: Option<crate::stats::Interval>,
    /// With rounds: every round, in the order run. `serial` and `parallel`
    /// above are round 1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<rounds::Round>,
    /// With `--workers` as a list: every count's speedup and the Amdahl
    /// fit. `parallel` and `speedup` above are the largest count's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<sweep::Sweep>,
    /// With `--param` over `--prepare`: every value's parallel phase over
    /// the rounds, with the recommendation. `serial`, `parallel` and
    /// `speedup` above are the first value's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<crate::modes::scan::Scan>,
    /// Speedup / workers.
    pub parallel_efficiency: f64,
    /// The busiest parallel worker's busy time over the mean.
    pub load_imbalance: f64,
    /// The recipe's preparation: whether the serial and parallel cache
    /// manifests are byte-identical (always true in a report: a difference
    /// fails the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_identical: Option<bool>,
    /// A user's preparation: whether the serial and parallel output
    /// manifests are byte-identical (likewise always true in a report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_identical: Option<bool>,
    /// What the preparation phases read from storage, and `--os-cache`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<storage::Storage>,
    /// Reasons to read `speedup` with care, for a person (see [`warnings`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
