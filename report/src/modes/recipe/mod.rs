//! What `--mode recipe` adds to the report: a digest of the state
//! directory as the run left it, and the components a recipe stage's time
//! is split into; and how it shows itself.

mod render;

use serde::{Deserialize, Serialize};

/// The mode's name.
pub const NAME: &str = "recipe";

/// What a recipe run adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "RecipeSection")]
pub struct Section {
    /// The state directory as the run left it (no file named).
    pub state: evidence::digest::Digest,
}

/// The components a stage's time is split into (a recipe stage's
/// `component:NAME_s` figures, plus process start-up and the rest), in the
/// order they stack.
pub const COMPONENTS: [&str; 9] = [
    "startup",
    "startup_spans",
    "integrity",
    "record_check",
    "load",
    "restore",
    "recompute",
    "work",
    "other",
];

/// A component's name for a person.
pub fn label(component: &str) -> &'static str {
    match component {
        "startup" => "process start-up",
        "startup_spans" => "start-up spans",
        "integrity" => "integrity checks",
        "record_check" => "completion-record checks",
        "load" => "artifact loads",
        "restore" => "model restore",
        "recompute" => "recomputation",
        "work" => "work",
        _ => "other",
    }
}
