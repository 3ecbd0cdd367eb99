//! A pipeline step's trial: resets, the stages whose completion marker
//! lets a resume skip them, the run of the rest (each stage under its own
//! worker), and the scratch state judged against the cold runs'.

use super::{Baseline, Runner, Trouble};
use crate::campaign::CampaignError;
use crate::campaign::file::{StepKind, StepSpec};
use crate::modes::{RunPlan, diagnostic};
use crate::plan::Settings;
use report::campaign::report::{self as records, TrialReport};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

impl Runner<'_> {
    /// One trial of an external pipeline: a cold step resets the declared
    /// paths and runs every stage; a resume skips the stages whose
    /// completion marker exists; an interrupted step resets, runs the
    /// pipeline until its kill point (the stage's whole tree is killed
    /// with SIGKILL there), then resumes. Each stage runs under its own
    /// worker, measured with its process tree; the scratch directory's
    /// digest stands for the state.
    pub(super) fn pipeline_trial(
        &self,
        step: &StepSpec,
        t: u32,
        run_rel: &str,
        (reference, baseline): (&mut Option<(String, PathBuf)>, &mut Baseline),
        artifacts: &mut Vec<report::rundir::report::ArtifactRecord>,
    ) -> Result<TrialReport, Trouble> {
        let fail =
            |what: String| CampaignError::Failed(format!("step '{}' trial {t}: {what}", step.name));
        let pipeline = &self.campaign.pipeline;
        if step.kind != StepKind::Resume {
            for path in pipeline.iter().flat_map(|s| &s.reset) {
                let removed = match std::fs::symlink_metadata(path) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
                    Ok(_) => std::fs::remove_file(path),
                    Err(_) => Ok(()),
                };
                removed.map_err(|e| fail(format!("resetting a declared path: {e}")))?;
            }
        }
        let killed = match step.kind {
            StepKind::Interrupted => {
                let killed_rel = format!("{run_rel}-killed");
                let (plan, _) = self.pipeline_plan(false, &killed_rel, step.kill_point());
                Some(self.killed_run(step, t, plan, &killed_rel, artifacts)?)
            }
            _ => None,
        };
        let (plan, skipped) = self.pipeline_plan(step.kind != StepKind::Cold, run_rel, None);
        let (outcome, span_s) = self.execute(&plan);
        let summary = outcome.map_err(|f| self.failed(step, t, run_rel, false, f))?;
        let mut parts = records::stage_parts(&summary.report);
        let calls = records::stage_calls(&summary.report);
        // A run's stages are numbered in its own plan, which leaves out the
        // skipped ones: each keeps its place in the pipeline instead.
        for (name, part) in parts.iter_mut() {
            if let Some(order) = self.campaign.pipeline.iter().position(|st| st.name == *name) {
                part.order = order;
            }
        }
        let (run_wall_s, run) = (summary.report.run_wall_s, run_rel.to_string());
        for (name, part) in skipped {
            parts.insert(name, part);
        }
        report::campaign::spans::apply_roles(&mut parts, &self.campaign.roles());
        let cold = step.kind == StepKind::Cold;
        let (digest, differing, beyond) = match &self.campaign.campaign.scratch {
            Some(dir) => {
                let files = evidence::digest::files_all_but(dir, &[host::dirlock::LOCK_FILE])
                    .map_err(|e| fail(format!("digesting the scratch directory: {e}")))?;
                let label = format!("{} {t}", step.name);
                let excluded = self.campaign.campaign.excluded();
                let (d, n, b) = baseline.judge(files, &excluded, cold, &label);
                (d, Some(n), (!cold).then_some(b))
            }
            None => (String::new(), None, None),
        };
        if reference.is_none() {
            *reference = Some((digest.clone(), PathBuf::new()));
        }
        let identical = reference.as_ref().is_some_and(|(r, _)| *r == digest);
        Ok(TrialReport {
            run,
            run_wall_s,
            total_s: parts.values().map(|p| p.total()).sum(),
            stages: parts,
            state_sha256: digest,
            killed,
            identical_to_cold: identical,
            differing_files: differing,
            beyond_baseline: beyond,
            checkpoint_bytes: None,
            checkpoint_write_s: None,
            span_s,
            calls,
        })
    }

    /// The run of the pipeline's stages and the stages skipped because
    /// `skip_complete` and their marker exists; `kill`: where to kill it.
    fn pipeline_plan(
        &self,
        skip_complete: bool,
        run_rel: &str,
        kill: Option<crate::kill_points::KillAt>,
    ) -> (RunPlan, Vec<(String, records::StagePart)>) {
        let pipeline = &self.campaign.pipeline;
        let mut skipped = Vec::new();
        let mut stages = Vec::new();
        for (order, st) in pipeline.iter().enumerate() {
            let started = Instant::now();
            let complete = skip_complete && st.marker.as_ref().is_some_and(|m| m.exists());
            if complete {
                // The check is all a skipped stage costs: its wall.
                let checked = started.elapsed().as_secs_f64();
                let mut part = records::StagePart { order, wall_s: checked, ..Default::default() };
                part.components.insert("record_check".into(), checked);
                part.skipped = true;
                skipped.push((st.name.clone(), part));
            } else {
                stages.push(protocol::Stage::Exec {
                    name: st.name.clone(),
                    argv: st.argv.iter().map(|w| protocol::Word::from(w.as_str())).collect(),
                    cwd: st
                        .cwd
                        .as_deref()
                        .unwrap_or(Path::new("."))
                        .to_string_lossy()
                        .into_owned()
                        .into(),
                    env: st.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                });
            }
        }
        // Every stage complete still makes a run (of no stage, no process):
        // a real, verifiable record that the resume had nothing to do.
        let s = &self.campaign.campaign;
        let timeout =
            pipeline.iter().filter_map(|st| st.timeout_s).chain(s.stage_timeout_s).reduce(f64::max);
        let stage_spans = pipeline
            .iter()
            .map(|st| (st.name.clone(), st.span_targets()))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        let plan = RunPlan {
            settings: Settings {
                stage_timeout: timeout.map(Duration::from_secs_f64),
                data: None,
                kill_at: kill,
                spans: s.span_targets(),
                stage_spans,
                ..self.settings(run_rel)
            },
            mode: Box::new(diagnostic::Plan { stages: crate::plan::keyed(stages) }),
        };
        (plan, skipped)
    }
}
