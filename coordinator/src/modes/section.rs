//! What a mode adds to a report, and how it shows it: the one trait every
//! view (summary.md, the plots, the console, the exports) walks, so no view
//! asks which mode it has. A section is stored in report.json flattened
//! beside the common part and tagged by `mode`; reading it back asks the
//! registry ([`super::MODES`]) which mode's type that tag names.

use super::Report;
use crate::chart::Figure;
use crate::rundir::report::TrialSet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::Any;
use std::collections::BTreeMap;

/// A mode's part of a report. Every method but the first five has a
/// default, for a mode with nothing of that kind to show.
pub(crate) trait ModeSection: std::fmt::Debug + Send + Sync {
    /// The mode's name, the report's `mode`.
    fn mode(&self) -> &'static str;
    /// The section's own fields, as report.json holds them (an object).
    fn fields(&self) -> serde_json::Value;
    fn clone_box(&self) -> Box<dyn ModeSection>;
    fn as_any(&self) -> &dyn Any;
    #[cfg(test)]
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// Every counted trial of every stage, keyed like `stages`, for modes
    /// that repeat stages in fresh processes.
    fn trials(&self) -> Option<&BTreeMap<String, TrialSet>> {
        None
    }
    /// Its part of summary.md, after the stage table and its warnings.
    fn summary(&self, _r: &Report, _s: &mut String) {}
    /// Its lines on stdout after the stage table; `requested_workers` is
    /// what `--workers` asked for.
    fn console(&self, _r: &Report, _requested_workers: u32) {}
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

/// A report's section: one mode's, behind [`ModeSection`].
#[derive(Debug)]
pub(crate) struct Section(pub(crate) Box<dyn ModeSection>);

impl Section {
    pub(crate) fn new(s: impl ModeSection + 'static) -> Section {
        Section(Box::new(s))
    }

    /// The section as its mode's own type, if it is that mode's.
    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    #[cfg(test)]
    pub(crate) fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.0.as_any_mut().downcast_mut()
    }
}

impl std::ops::Deref for Section {
    type Target = dyn ModeSection;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl Clone for Section {
    fn clone(&self) -> Section {
        Section(self.0.clone_box())
    }
}

impl Serialize for Section {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let serde_json::Value::Object(fields) = self.0.fields() else {
            return Err(S::Error::custom(format!("the {} section is not an object", self.mode())));
        };
        let mut map = s.serialize_map(Some(fields.len() + 1))?;
        map.serialize_entry("mode", self.0.mode())?;
        for (k, v) in &fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Section {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Section, D::Error> {
        use serde::de::Error;
        let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let mode = match fields.remove("mode") {
            Some(serde_json::Value::String(m)) => m,
            Some(other) => return Err(D::Error::custom(format!("mode {other} is not a name"))),
            None => return Err(D::Error::missing_field("mode")),
        };
        let Some(m) = super::by_name(&mode) else {
            return Err(D::Error::custom(format!("unknown mode {mode:?}")));
        };
        m.section(serde_json::Value::Object(fields)).map(Section).map_err(D::Error::custom)
    }
}

/// Implements [`ModeSection`]'s first five methods for a serde type.
macro_rules! section_basics {
    ($name:expr) => {
        fn mode(&self) -> &'static str {
            $name
        }
        fn fields(&self) -> serde_json::Value {
            serde_json::to_value(self).expect("a section serialises")
        }
        fn clone_box(&self) -> Box<dyn $crate::modes::section::ModeSection> {
            Box::new(self.clone())
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        #[cfg(test)]
        fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
            self
        }
    };
}
pub(crate) use section_basics;

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
            let fields = fields.as_object().unwrap();
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
        v["mode"] = "bench".into();
        let e = serde_json::from_value::<Report>(v.clone()).unwrap_err().to_string();
        assert!(e.contains("unknown mode \"bench\""), "{e}");
        v.as_object_mut().unwrap().remove("mode");
        let e = serde_json::from_value::<Report>(v).unwrap_err().to_string();
        assert!(e.contains("mode"), "{e}");
    }
}
