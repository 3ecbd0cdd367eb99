//! What a stage ran on, as the report keeps it: thread settings, the
//! commit, and what the Python helper said at the command's exit.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a stage ran on: `protocol::Runtime` as the report keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RuntimeRecord {
    /// Thread settings from the stage's environment, only those set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thread_settings: BTreeMap<String, String>,
    /// The commit where a command ran, and whether tracked files differed
    /// (never the repository's path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dirty: Option<bool>,
    /// The Python helper's report at the command's exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub distributions: BTreeMap<String, String>,
    /// The imported frameworks' devices (`jax:cpu`, `tensorflow:GPU`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// The SHA-256 of each Python source under the working directory the
    /// command imported, by module name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

impl RuntimeRecord {
    /// None when the worker found nothing to say.
    pub fn measured(r: &protocol::Runtime) -> Option<RuntimeRecord> {
        let record = RuntimeRecord {
            thread_settings: r.threads.iter().cloned().collect(),
            git_commit: r.git_commit.clone(),
            git_dirty: r.git_dirty,
            python: r.python.clone(),
            distributions: r.distributions.iter().cloned().collect(),
            devices: r.devices.clone(),
            sources: r.sources.iter().cloned().collect(),
        };
        (record != RuntimeRecord::default()).then_some(record)
    }

    /// One line for a person: `Python 3.11.7 (numpy 2.4.6, pyarrow 26.0.1);
    /// commit 0123abcdef01, dirty; OMP_NUM_THREADS=4`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(python) = &self.python {
            let dists: Vec<String> =
                self.distributions.iter().map(|(n, v)| format!("{n} {v}")).collect();
            parts.push(match dists.is_empty() {
                true => format!("Python {python}"),
                false => format!("Python {python} ({})", dists.join(", ")),
            });
        }
        if !self.devices.is_empty() {
            parts.push(format!("devices {}", self.devices.join(", ")));
        }
        if !self.sources.is_empty() {
            parts.push(format!("{} source file(s) of its own hashed", self.sources.len()));
        }
        if let Some(commit) = &self.git_commit {
            let short = &commit[..12.min(commit.len())];
            parts.push(match self.git_dirty {
                Some(true) => format!("commit {short}, dirty"),
                Some(false) => format!("commit {short}, clean"),
                None => format!("commit {short}"),
            });
        }
        let threads: Vec<String> =
            self.thread_settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !threads.is_empty() {
            parts.push(threads.join(" "));
        }
        parts.join("; ")
    }
}
