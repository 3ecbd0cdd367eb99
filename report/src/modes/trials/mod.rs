//! What `--mode trials` adds to the report: every trial of every stage,
//! with statistics, and how it shows itself (`render`).

mod render;
pub mod warnings;

use crate::rundir::report::{Counts, TrialSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The mode's name.
pub const NAME: &str = "trials";

/// Coefficient of variation above which a stage's wall time is called unstable.
pub const MAX_CV: f64 = 0.05;
/// A first counted trial slower than this times the median of the rest is flagged.
pub const FIRST_TRIAL_RATIO: f64 = 1.25;

/// What a trials run adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "TrialsSection")]
pub struct Section {
    /// The cache the recipe stages' prerequisites prepared, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// Every trial of every stage, with statistics, keyed like `stages`.
    pub trials: BTreeMap<String, TrialSet>,
    /// The rule that marks outliers.
    pub outlier_rule: String,
    /// A parameter scan's values and recommendation (`--param`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<crate::modes::scan::Scan>,
}
