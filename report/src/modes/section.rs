//! What a mode adds to a report ([`Section`], one variant per mode), and
//! how it shows it: the one trait every view (summary.md, the plots, the
//! console, the exports) walks, so no view asks which mode it has. A
//! section is stored in report.json flattened beside the common part and
//! tagged by `mode`.

use super::{Report, cold_prep, diagnostic, profile, recipe, trials};
use crate::chart::Figure;
use crate::rundir::report::TrialSet;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// How a mode's section shows itself. Every method has a default, for a
/// mode with nothing of that kind to show.
pub trait ModeSection: std::fmt::Debug + Send + Sync {
    /// Every counted trial of every stage, keyed like `stages`, for modes
    /// that repeat stages in fresh processes.
    fn trials(&self) -> Option<&BTreeMap<String, TrialSet>> {
        None
    }
    /// A parameter scan (`--param`): its values and recommendation.
    fn scan(&self) -> Option<&crate::modes::scan::Scan> {
        None
    }
    /// Its part of every view, after the stage table and its warnings:
    /// summary.md and report.html show every block, the console those
    /// that show everywhere.
    fn blocks(&self, _r: &Report) -> crate::doc::Blocks {
        crate::doc::Blocks::default()
    }
    /// Its plots, after the stages plot.
    fn plots<'a>(&'a self, _r: &'a Report) -> Vec<Box<dyn Figure + 'a>> {
        Vec::new()
    }
    /// What the run found, in one phrase for the dashboard's table; None
    /// names the slowest stage.
    fn headline(&self) -> Option<String> {
        None
    }
    /// What a bar of the stages plot stands for, when not one process per stage.
    fn stages_plot_note(&self) -> Option<&'static str> {
        None
    }
    /// The stages plot's label for a stage whose key is `base`, when the
    /// mode labels it otherwise.
    fn stage_label(&self, _base: &str) -> Option<String> {
        None
    }
    /// The sides whose timelines are drawn from jobs.jsonl.gz (each names
    /// its phase and when it began), for [`Report::read_jobs`] to fill.
    fn timelined(&mut self) -> Vec<&mut crate::rundir::report::PrepSide> {
        Vec::new()
    }
    /// Whether a stage key `BASE#R` (R ≥ 2) is a later round of `BASE`,
    /// drawn with it and compared as another sample of it.
    fn has_rounds(&self) -> bool {
        false
    }
}

/// A report's section: one mode's records, tagged by `mode` in report.json.
// A run holds one report at a time: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "mode")]
pub enum Section {
    #[serde(rename = "diagnostic")]
    Diagnostic(diagnostic::Section),
    #[serde(rename = "cold-prep")]
    ColdPrep(cold_prep::Section),
    #[serde(rename = "trials")]
    Trials(trials::Section),
    #[serde(rename = "profile")]
    Profile(profile::Section),
    #[serde(rename = "recipe")]
    Recipe(recipe::Section),
}

impl Section {
    /// The mode's name, the report's `mode`.
    pub fn mode(&self) -> &'static str {
        match self {
            Section::Diagnostic(_) => diagnostic::NAME,
            Section::ColdPrep(_) => cold_prep::NAME,
            Section::Trials(_) => trials::NAME,
            Section::Profile(_) => profile::NAME,
            Section::Recipe(_) => recipe::NAME,
        }
    }

    /// The section's own fields, as report.json holds them beside the
    /// common part (without `mode`).
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut fields = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(fields)) => fields,
            _ => unreachable!("a tagged section serialises to an object"),
        };
        fields.remove("mode");
        fields
    }

    /// The section of the mode called `mode`, from its fields.
    fn read(mode: &str, fields: serde_json::Value) -> Result<Section, ReadError> {
        fn of<T: serde::de::DeserializeOwned>(
            v: serde_json::Value,
            into: fn(T) -> Section,
        ) -> Result<Section, ReadError> {
            serde_json::from_value(v).map(into).map_err(ReadError::Fields)
        }
        match mode {
            diagnostic::NAME => of(fields, Section::Diagnostic),
            cold_prep::NAME => of(fields, Section::ColdPrep),
            trials::NAME => of(fields, Section::Trials),
            profile::NAME => of(fields, Section::Profile),
            recipe::NAME => of(fields, Section::Recipe),
            other => Err(ReadError::UnknownMode(other.to_string())),
        }
    }
}

/// Why a section could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("unknown mode {0:?}")]
    UnknownMode(String),
    #[error("{0}")]
    Fields(serde_json::Error),
}

impl std::ops::Deref for Section {
    type Target = dyn ModeSection;
    fn deref(&self) -> &Self::Target {
        match self {
            Section::Diagnostic(s) => s,
            Section::ColdPrep(s) => s,
            Section::Trials(s) => s,
            Section::Profile(s) => s,
            Section::Recipe(s) => s,
        }
    }
}

impl std::ops::DerefMut for Section {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Section::Diagnostic(s) => s,
            Section::ColdPrep(s) => s,
            Section::Trials(s) => s,
            Section::Profile(s) => s,
            Section::Recipe(s) => s,
        }
    }
}

/// `Section::from(a mode's section)`.
macro_rules! from_section {
    ($($variant:ident($module:ident)),*) => {
        $(impl From<$module::Section> for Section {
            fn from(s: $module::Section) -> Section {
                Section::$variant(s)
            }
        })*
    };
}
from_section!(
    Diagnostic(diagnostic),
    ColdPrep(cold_prep),
    Trials(trials),
    Profile(profile),
    Recipe(recipe)
);

impl<'de> Deserialize<'de> for Section {
    /// Read through a map (the section is flattened beside the common
    /// part), so that an unknown mode is refused by its name.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Section, D::Error> {
        use serde::de::Error;
        let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let mode = match fields.remove("mode") {
            Some(serde_json::Value::String(m)) => m,
            Some(other) => return Err(D::Error::custom(format!("mode {other} is not a name"))),
            None => return Err(D::Error::missing_field("mode")),
        };
        Section::read(&mode, serde_json::Value::Object(fields)).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use crate::modes::Report;

    /// A report read and written again is the same JSON, whatever its mode;
    /// a mode the registry does not know is refused by name.
    #[test]
    fn a_report_reads_back_to_the_same_json_and_an_unknown_mode_is_refused() {
        for text in [
            include_str!("../render/fixtures/cold-prep-report.json"),
            include_str!("../render/fixtures/trials-report.json"),
            include_str!("../render/fixtures/sweep-report.json"),
        ] {
            let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
            let r: Report = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(r.mode(), v["mode"].as_str().unwrap());
            // A cold-prep fixture from before jobs.jsonl.gz: its timelines
            // are read (its plot draws them) and never written again.
            for side in ["serial", "parallel"] {
                if let Some(side) = v.get_mut(side).and_then(|s| s.as_object_mut()) {
                    assert!(side.remove("timeline").is_some(), "{side:?}");
                }
            }
            // Every key beside the common part is the section's, unchanged.
            let common = [
                "schema",
                "schema_version",
                "isolation",
                "declaration_sha256",
                "environment_sha256",
                "stages",
                "workers",
                "artifacts",
                "run_wall_s",
                "launcher",
                "hosts",
                "machine_warnings",
                "body_sha256",
                "mode",
            ];
            let own: Vec<&String> =
                v.as_object().unwrap().keys().filter(|k| !common.contains(&k.as_str())).collect();
            let fields = r.section.fields();
            assert!(own.len() >= 2, "{own:?}");
            assert_eq!(fields.keys().collect::<Vec<_>>(), own, "{} report", r.mode());
            for k in own {
                assert_eq!(fields[k], v[k], "{} report, {k}", r.mode());
            }
            let written = serde_json::to_value(&r).unwrap();
            assert_eq!(written["mode"], v["mode"]);
            assert_eq!(written["speedup"], v["speedup"]);
        }
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../render/fixtures/trials-report.json")).unwrap();
        // Another schema_version is another format: refused in one line
        // naming both versions.
        for other in [0, 2] {
            let mut w = v.clone();
            w["schema_version"] = other.into();
            let e = serde_json::from_value::<Report>(w).unwrap_err().to_string();
            let both = format!(
                "schema_version {other} cannot be read: this stagebench reads schema_version 1"
            );
            assert!(e.contains(&both) && !e.contains('\n'), "{e}");
        }
        v["mode"] = "bench".into();
        let e = serde_json::from_value::<Report>(v.clone()).unwrap_err().to_string();
        assert!(e.contains("unknown mode \"bench\""), "{e}");
        v.as_object_mut().unwrap().remove("mode");
        let e = serde_json::from_value::<Report>(v).unwrap_err().to_string();
        assert!(e.contains("mode"), "{e}");
    }
}
