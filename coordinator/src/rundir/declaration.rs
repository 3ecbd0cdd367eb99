//! declaration.json: what will be measured, written and fsynced before any
//! measurement starts.

use crate::plan::RunPlan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "stagebench.declaration";
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Declaration {
    pub schema: String,
    pub schema_version: u32,
    pub created_utc: String,
    pub mode: String,
    pub isolation: String,
    pub workers: u32,
    /// Planned stages in order: `{ key, stage }`.
    pub stages: Vec<DeclaredStage>,
    /// Every parameter and seed of the run.
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// Fingerprint of the frozen dataset, for modes that read one.
    pub dataset_fingerprint: Option<String>,
    pub program: Program,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeclaredStage {
    pub key: String,
    pub stage: String,
    /// How many jobs (e.g. series) the stage runs.
    pub jobs: usize,
    /// Worker processes at once.
    pub workers: u32,
    /// SHA-256 of the stage's full definition (for a command, its command
    /// line), so runs of different definitions are never compared as one,
    /// while the definition itself (which may hold paths) stays out.
    pub definition_sha256: String,
}

/// The `definition_sha256` of a stage. Where the dataset lives on disk is
/// not part of a stage's definition (the declaration's dataset fingerprint
/// says which data it is), so it is blanked before hashing.
pub fn definition_sha256(stage: &protocol::Stage) -> String {
    let mut value = serde_json::to_value(stage).expect("a stage serialises");
    blank_paths(&mut value);
    evidence::sha256_hex(&serde_json::to_vec(&value).expect("a value serialises"))
}

/// Blanks every `dataset` and `state` (paths) in a stage's value, at any depth.
fn blank_paths(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if (k == "dataset" || k == "state") && v.is_string() {
                    *v = serde_json::Value::String(String::new());
                } else {
                    blank_paths(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(blank_paths),
        _ => {}
    }
}

/// The program's identity: which code, built how, is measuring.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Program {
    pub version: String,
    /// SHA-256 over every source file of the workspace, embedded at build time.
    pub source_sha256: String,
    pub source_files: u64,
    pub git_commit: Option<String>,
    pub profile: String,
    /// SHA-256 of the worker binary that will run the stages.
    pub worker_binary_sha256: String,
}

impl Declaration {
    pub fn from_plan(
        plan: &RunPlan,
        stages: Vec<DeclaredStage>,
        dataset_fingerprint: Option<String>,
        worker_binary_sha256: String,
    ) -> Declaration {
        let mut parameters = BTreeMap::new();
        let secs = |d: std::time::Duration| serde_json::json!(d.as_secs_f64());
        parameters.insert("connect_timeout_s".into(), secs(plan.connect_timeout));
        parameters.insert(
            "stage_timeout_s".into(),
            plan.stage_timeout.map(secs).unwrap_or(serde_json::Value::Null),
        );
        parameters.insert("termination_grace_s".into(), secs(plan.grace));
        parameters.insert("launcher".into(), plan.launcher.as_str().into());
        if plan.mode == crate::plan::Mode::Profile {
            parameters.insert("seed".into(), plan.seed.into());
            parameters.insert("batch".into(), recipe::loader::BATCH.into());
            parameters.insert("shuffle_buffer".into(), recipe::loader::SHUFFLE_BUFFER.into());
            parameters.insert("context_frames".into(), recipe::targets::CONTEXT_FRAMES.into());
        }
        if let Some(state) = &plan.state {
            parameters.insert("seed".into(), plan.seed.into());
            parameters.insert("epochs".into(), state.epochs.into());
            parameters.insert("resume_policy".into(), state.policy.as_str().into());
        }
        if let Some(k) = &plan.kill_at {
            parameters.insert("kill_at".into(), format!("{}:{}", k.stage, k.fraction).into());
        }
        if plan.mode == crate::plan::Mode::Trials {
            parameters.insert("trials".into(), plan.trials.into());
            parameters.insert("warmup".into(), plan.warmup.into());
            parameters
                .insert("bootstrap_resamples".into(), crate::stats::BOOTSTRAP_RESAMPLES.into());
        }
        Declaration {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            created_utc: crate::timestamp::rfc3339_utc_now(),
            mode: plan.mode.as_str().into(),
            isolation: plan.isolation.as_str().into(),
            workers: plan.workers,
            stages,
            parameters,
            dataset_fingerprint,
            program: Program::current(worker_binary_sha256),
        }
    }
}

impl Program {
    /// This build, with the worker binary it will run.
    pub fn current(worker_binary_sha256: String) -> Program {
        use protocol::program as p;
        Program {
            version: p::VERSION.into(),
            source_sha256: p::SOURCE_SHA256.into(),
            source_files: p::SOURCE_FILES.parse().unwrap_or(0),
            git_commit: p::git_commit().map(str::to_string),
            profile: p::PROFILE.into(),
            worker_binary_sha256,
        }
    }
}
