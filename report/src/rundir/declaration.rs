//! declaration.json: what will be measured, written and fsynced before any
//! measurement starts.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "stagebench.declaration";
pub const SCHEMA_VERSION: u32 = 1;

/// declaration.json's `schema_version`: this one's only (see
/// [`super::report::expect_version`]).
fn this_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    super::report::expect_version(d, SCHEMA, SCHEMA_VERSION)
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Declaration {
    pub schema: String,
    #[serde(deserialize_with = "this_version")]
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

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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

/// The `definition_sha256` of a stage. Where the inputs live on disk is
/// not part of a definition (the declaration's dataset fingerprint says
/// which data it is): a [`protocol::Definition`] holds every path blank, by
/// its type. The bytes hashed are the canonical ones
/// ([`evidence::to_bytes`]), as for every other hash of evidence.
pub fn definition_sha256(definition: &protocol::Definition) -> String {
    sha256_of(definition)
}

/// The `definition_sha256` of a phase: its stages' definitions in order,
/// the digest of their array, made one definition at a time.
pub fn phase_definition_sha256(
    definitions: impl IntoIterator<Item = protocol::Definition>,
) -> String {
    evidence::array_sha256(definitions)
}

fn sha256_of(definition: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(definition).expect("a definition serialises");
    evidence::sha256_hex(&evidence::to_bytes(&value))
}

/// The program's identity: which code, built how, is measuring.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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

/// The parameters' keys other code reads back (the writer and `compare`
/// share them): the files `--sources` bound, by path, with their SHA-256;
/// the digest of `--inputs` and how many files it covers.
pub mod keys {
    pub const SOURCES: &str = "sources";
    pub const INPUTS_SHA256: &str = "inputs_sha256";
    pub const INPUTS_FILES: &str = "inputs_files";
}

impl Declaration {
    /// The files `--sources` bound, by path (empty when none was given).
    pub fn sources(&self) -> BTreeMap<String, String> {
        self.parameter(keys::SOURCES).unwrap_or_default()
    }

    /// `--inputs`: how many files, and their combined SHA-256; None when
    /// none were declared.
    pub fn inputs(&self) -> Option<(u64, String)> {
        Some((self.parameter(keys::INPUTS_FILES)?, self.parameter(keys::INPUTS_SHA256)?))
    }

    /// A parameter read as its type; None when absent or of another shape.
    /// (The parameters are an open map: each mode records its own.)
    fn parameter<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        T::deserialize(self.parameters.get(key)?).ok()
    }

    /// A declaration made now, by this build.
    pub fn new(
        mode: &str,
        isolation: &str,
        workers: u32,
        stages: Vec<DeclaredStage>,
        parameters: BTreeMap<String, serde_json::Value>,
        dataset_fingerprint: Option<String>,
        program: Program,
    ) -> Declaration {
        Declaration {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            // To the microsecond: runs of one second keep their order.
            created_utc: evidence::timestamp::rfc3339_utc_now_micros(),
            mode: mode.into(),
            isolation: isolation.into(),
            workers,
            stages,
            parameters,
            dataset_fingerprint,
            program,
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

#[cfg(test)]
mod tests {
    use super::{definition_sha256, phase_definition_sha256};
    use protocol::{ResumePolicy, Stage, StateInput, StateStep};

    #[test]
    fn a_definition_does_not_depend_on_where_its_inputs_live() {
        let at = |data: &str, state: &str, cwd: &str| {
            let input = StateInput {
                dataset: data.into(),
                state: state.into(),
                policy: ResumePolicy::Load,
                epochs: 1,
                seed: 0,
            };
            let exec = Stage::Exec {
                name: "fit".into(),
                argv: vec!["python3".into(), "fit.py".into()],
                cwd: cwd.into(),
                env: Vec::new(),
            };
            let prepare = Stage::PrepareSeries {
                dataset: data.into(),
                id: "a1".into(),
                file: "sources/a1.parquet".into(),
                sha256: "00".into(),
                cache: "private-feature-cache".into(),
            };
            (
                definition_sha256(&Stage::Resumable(StateStep::Train, input).definition()),
                definition_sha256(&exec.definition()),
                phase_definition_sha256([prepare.definition(), prepare.definition()]),
            )
        };
        // Made one definition at a time, the digest is the whole array's
        // (every run's phases before kept theirs: `compare` and `history`
        // match runs by it).
        let one = Stage::PrepareSeries {
            dataset: "/d".into(),
            id: "a1".into(),
            file: "sources/a1.parquet".into(),
            sha256: "00".into(),
            cache: "c".into(),
        }
        .definition();
        let two = Stage::Sleep { ms: 3 }.definition();
        assert_eq!(
            phase_definition_sha256([one.clone(), two.clone()]),
            super::sha256_of(&vec![one, two])
        );
        let home = at("/home/ana/data", "/home/ana/state", "/home/ana/pipe");
        assert_eq!(home, at("/srv/copy/data", "/tmp/s", "/srv/pipe"));
        // What the stage does still counts.
        let other = Stage::Exec {
            name: "fit".into(),
            argv: vec!["python3".into(), "other.py".into()],
            cwd: "/home/ana/pipe".into(),
            env: Vec::new(),
        };
        assert_ne!(home.1, definition_sha256(&other.definition()));
    }

    /// The profile's stages over a dataset: the same at any path.
    #[test]
    fn profile_stages_hash_no_dataset_path() {
        use protocol::{EpochInput, ModelStep};
        let stages = |data: &str| {
            let input = EpochInput {
                dataset: data.into(),
                cache: "private-feature-cache".into(),
                seed: 0,
                normalizer_sha256: String::new(),
                contexts_sha256: String::new(),
            };
            [
                Stage::VerifySources { dataset: data.into() },
                Stage::FitNormalizer { dataset: data.into(), cache: "c".into() },
                Stage::CountContexts { dataset: data.into(), cache: "c".into() },
                Stage::LoaderEpoch(input.clone()),
                Stage::Model(ModelStep::FitEpoch, input),
            ]
            .map(|s| definition_sha256(&s.definition()))
        };
        assert_eq!(stages("/home/ana/frozen"), stages("/mnt/b/frozen"));
    }
}
