//! `--mode diagnostic` adds nothing to the report.

use super::ModeSection;
use serde::{Deserialize, Serialize};

/// The mode's name.
pub const NAME: &str = "diagnostic";

/// A diagnostic run adds nothing to the report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "DiagnosticSection")]
pub struct Section {}

impl ModeSection for Section {}
