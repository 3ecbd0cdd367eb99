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
    /// Whether items carried weights (handed out largest first).
    pub weighted: bool,
    /// `--inputs`, digested before the first phase and after the last (of
    /// several, their counts summed and their digests' digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<crate::inputs::Digest>,
}
