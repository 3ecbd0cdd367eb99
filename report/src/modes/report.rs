//! report.json: every measurement of a successful run, bound by SHA-256 to
//! the declaration, the environment, every artifact and its own body. The
//! common part is the same for every mode; what a mode adds is its
//! [`Section`], flattened into the same JSON object and tagged by `mode`.

use super::Section;
use crate::rundir::jobs;
use crate::rundir::report::{ArtifactRecord, ProcessRecord, StageRecord, TrialSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    pub schema: String,
    #[serde(deserialize_with = "crate::rundir::report::this_version")]
    pub schema_version: u32,
    pub isolation: String,
    pub declaration_sha256: String,
    pub environment_sha256: String,
    /// One record per planned stage, keyed by its key in the declaration.
    pub stages: BTreeMap<String, StageRecord>,
    /// Every worker process the run launched, in launch order.
    pub workers: Vec<ProcessRecord>,
    /// Every artifact, sorted by path.
    pub artifacts: Vec<ArtifactRecord>,
    /// Wall time of the whole run, from the first spawn to the last reap.
    pub run_wall_s: f64,
    /// How workers were started: `local` or `slurm`.
    #[serde(default = "local")]
    pub launcher: String,
    /// How many distinct hosts ran the workers (by `host_sha256`).
    #[serde(default)]
    pub hosts: u32,
    /// What about the machine makes these figures hard to trust (see
    /// `rundir::environment::warnings`): load, governor, quota, oversubscription.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_warnings: Vec<String>,
    /// `--inputs`, each as digested after the last phase, in the order
    /// given (a change fails the run, so each is `unchanged`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<crate::inputs::Digest>,
    /// The campaign step and trial this run is (`CAMPAIGN/STEP/TRIAL`),
    /// inside a campaign: its mode is how the step ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign_step: Option<String>,
    /// The mode's own part, tagged by `mode`.
    #[serde(flatten)]
    pub section: Section,
}

fn local() -> String {
    "local".into()
}

impl Report {
    /// Reads back what report.json leaves to the jobs.jsonl.gz it binds
    /// (a report without one is left as it is): the timelines its section
    /// draws, and with `every_job` each worker's jobs too, for a trace
    /// (every job then in memory). The file is streamed, so without
    /// `every_job` the timelines are all that is held.
    pub fn read_jobs(
        &mut self,
        dir: &std::path::Path,
        every_job: bool,
    ) -> Result<(), jobs::JobsError> {
        if !self.artifacts.iter().any(|a| a.kind == jobs::KIND) {
            return Ok(());
        }
        let Report { section, workers, .. } = self;
        let mut sides = section.timelined();
        let mut placed: Vec<(Option<String>, crate::rundir::report::Timeline)> = sides
            .iter()
            .map(|s| {
                let timeline =
                    crate::rundir::report::Timeline::new(s.started_s.unwrap_or(0.0), s.wall_s);
                (s.phase.clone(), timeline)
            })
            .collect();
        let mut each: BTreeMap<(String, u32), Vec<crate::rundir::report::JobSlice>> =
            BTreeMap::new();
        jobs::read(dir, workers, |line| {
            for (phase, timeline) in &mut placed {
                if phase.as_deref() == Some(line.phase.as_str()) {
                    timeline.push(line.rank, line.start_s, line.end_s);
                }
            }
            if every_job {
                each.entry((line.phase.clone(), line.rank)).or_default().push(line.into_job());
            }
        })?;
        for (side, (_, timeline)) in sides.iter_mut().zip(placed) {
            side.timeline = timeline.spans();
        }
        for w in workers.iter_mut() {
            if let Some(jobs) = each.remove(&(w.phase.clone(), w.rank)) {
                w.jobs = jobs;
            }
        }
        Ok(())
    }
}

impl Report {
    /// The mode, as the report records it.
    pub fn mode(&self) -> &'static str {
        self.section.mode()
    }

    /// `--inputs` in one line, for summary.md and the console.
    /// What the run found, in one phrase (the dashboard's column,
    /// report.html's first line): the mode's own, else the slowest stage.
    /// Names are in backticks, as Markdown code.
    pub fn headline(&self) -> String {
        if let Some(h) = self.section.headline() {
            return h;
        }
        let slowest = self.stages.iter().min_by(|a, b| b.1.wall_s.total_cmp(&a.1.wall_s));
        match slowest {
            Some((k, s)) => format!("slowest stage `{k}` ({})", crate::fmt::duration(s.wall_s)),
            None => String::new(),
        }
    }

    pub fn inputs_line(&self) -> Option<String> {
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
    /// The stages in plan order: every view's rows.
    pub fn ordered(&self) -> Vec<(&String, &crate::rundir::report::StageRecord)> {
        let mut rows: Vec<_> = self.stages.iter().collect();
        rows.sort_by_key(|(_, st)| st.order);
        rows
    }

    pub fn trials(&self) -> Option<&BTreeMap<String, TrialSet>> {
        self.section.trials()
    }

    /// A parameter scan's values and recommendation (`--param`).
    pub fn scan(&self) -> Option<&crate::modes::scan::Scan> {
        self.section.scan()
    }
}
