//! What `--mode profile` adds to the report: the training partition's
//! counts and the fit epoch's input-wait fraction, and how it shows itself.

mod render;

use crate::rundir::report::Counts;
use serde::{Deserialize, Serialize};

/// The mode's name.
pub const NAME: &str = "profile";

/// What a profile adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ProfileSection")]
pub struct Section {
    /// The training partition's counts, with contexts and batches.
    pub counts: Counts,
    /// The fit epoch's loader waits as a share of its step time (waiting
    /// plus computing), and its grade (see [`crate::modes::input_wait::input_bound`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_wait_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bound: Option<String>,
}
