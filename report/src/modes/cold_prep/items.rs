//! What the report says of a user's own preparation's items (`--prepare`).

use serde::{Deserialize, Serialize};

/// What the report says about the items and the inputs.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ItemSummary")]
pub struct Summary {
    /// How many items each phase prepared.
    pub count: u64,
    /// SHA-256 of the items file.
    pub items_sha256: String,
    /// Whether items carried weights (handed out largest first, up to
    /// `sorted_max` of them).
    pub weighted: bool,
    /// The order items were handed out in: `largest_first` (weighted) or
    /// `file`; absent in reports made before weighted items could fall back
    /// to file order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// With weights: the most items sorted largest first; more are handed
    /// out in file order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sorted_max: Option<u64>,
    /// `--inputs`, digested before the first phase and after the last (of
    /// several, their counts summed and their digests' digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<crate::inputs::Digest>,
}

impl Summary {
    /// Whether items went largest weight first.
    pub fn largest_first(&self) -> bool {
        match &self.order {
            Some(order) => order == "largest_first",
            None => self.weighted,
        }
    }

    /// Why weighted items went in file order, as a warning.
    pub fn fell_back(&self) -> Option<String> {
        (self.weighted && !self.largest_first()).then(|| {
            format!(
                "the {} items carry weights but are more than the {} sorted largest first: they were handed out in file order (put the heaviest first in the file)",
                self.count,
                self.sorted_max.unwrap_or_default()
            )
        })
    }
}
