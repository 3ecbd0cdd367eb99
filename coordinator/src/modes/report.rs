//! report.json: every measurement of a successful run, bound by SHA-256 to
//! the declaration, the environment, every artifact and its own body. The
//! common part is the same for every mode; what a mode adds is its
//! [`Section`], flattened into the same JSON object and tagged by `mode`.

use super::Section;
use crate::rundir::report::{ArtifactRecord, ProcessRecord, StageRecord, TrialSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    pub(crate) schema: String,
    pub(crate) schema_version: u32,
    pub(crate) isolation: String,
    pub(crate) declaration_sha256: String,
    pub(crate) environment_sha256: String,
    /// One record per planned stage, keyed by its key in the declaration.
    pub(crate) stages: BTreeMap<String, StageRecord>,
    /// Every worker process the run launched, in launch order.
    pub(crate) workers: Vec<ProcessRecord>,
    /// Every artifact, sorted by path.
    pub(crate) artifacts: Vec<ArtifactRecord>,
    /// Wall time of the whole run, from the first spawn to the last reap.
    pub(crate) run_wall_s: f64,
    /// How workers were started: `local` or `slurm`.
    #[serde(default = "local")]
    pub(crate) launcher: String,
    /// How many distinct hosts ran the workers (by `host_sha256`).
    #[serde(default)]
    pub(crate) hosts: u32,
    /// What about the machine makes these figures hard to trust (see
    /// `rundir::environment::warnings`): load, governor, quota, oversubscription.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) machine_warnings: Vec<String>,
    /// `--inputs`, each as digested after the last phase, in the order
    /// given (a change fails the run, so each is `unchanged`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) inputs: Vec<crate::inputs::Digest>,
    /// The campaign step and trial this run is (`CAMPAIGN/STEP/TRIAL`),
    /// inside a campaign: its mode is how the step ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) campaign_step: Option<String>,
    /// The mode's own part, tagged by `mode`.
    #[serde(flatten)]
    pub(crate) section: Section,
}

fn local() -> String {
    "local".into()
}

impl Report {
    /// The mode, as the report records it.
    pub(crate) fn mode(&self) -> &'static str {
        self.section.mode()
    }

    /// `--inputs` in one line, for summary.md and the console.
    pub(crate) fn inputs_line(&self) -> Option<String> {
        let all = crate::inputs::combined(&self.inputs)?;
        let dirs = match self.inputs.len() {
            1 => String::new(),
            n => format!(" in {n} directories"),
        };
        let files = if all.files == 1 { "file" } else { "files" };
        Some(format!(
            "inputs: {} {files}, {}{dirs}, unchanged from before the first phase to after the last (SHA-256 {})",
            all.files,
            crate::fmt::mib(all.bytes),
            &all.sha256[..12.min(all.sha256.len())]
        ))
    }

    /// Trials: every trial of every stage, keyed like `stages`.
    pub(crate) fn trials(&self) -> Option<&BTreeMap<String, TrialSet>> {
        self.section.trials()
    }
}
