//! A run's or campaign's report.json read as the `report` crate's typed
//! records, so that a test names the fields it reads and a field that is
//! missing or renamed fails by its name (serde's "missing field `speedup`"
//! at read, or the compiler's), never as an `unwrap` on `None`.

use report::Report;
use report::campaign::report::CampaignReport;
use report::modes::{cold_prep, profile, trials};
use report::rundir::report::StageRecord;
use std::path::Path;

/// `dir/report.json`, typed.
pub fn read(dir: &Path) -> Report {
    parsed(&dir.join("report.json"))
}

/// A campaign directory's `report.json`, typed.
pub fn campaign(dir: &Path) -> CampaignReport {
    parsed(&dir.join("report.json"))
}

/// A bisection directory's `report.json`, typed.
pub fn bisection(dir: &Path) -> report::rundir::bisect::BisectReport {
    parsed(&dir.join("report.json"))
}

fn parsed<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A cold-prep report's section.
pub fn cold_prep(r: &Report) -> &cold_prep::Section {
    match &r.section {
        report::Section::ColdPrep(s) => s,
        other => panic!("a {} report, not cold-prep", other.mode()),
    }
}

/// A trials report's section.
pub fn trials(r: &Report) -> &trials::Section {
    match &r.section {
        report::Section::Trials(s) => s,
        other => panic!("a {} report, not trials", other.mode()),
    }
}

/// A profile report's section.
pub fn profile(r: &Report) -> &profile::Section {
    match &r.section {
        report::Section::Profile(s) => s,
        other => panic!("a {} report, not profile", other.mode()),
    }
}

/// The stage record `key`, or a panic that names it and the stages there are.
pub fn stage<'a>(r: &'a Report, key: &str) -> &'a StageRecord {
    r.stages.get(key).unwrap_or_else(|| {
        panic!("no stage {key} in the report: {:?}", r.stages.keys().collect::<Vec<_>>())
    })
}

/// A figure of a stage's `figures`, or a panic that names both.
pub fn figure(st: &StageRecord, name: &str) -> f64 {
    *st.figures.get(name).unwrap_or_else(|| {
        panic!(
            "stage {} has no figure {name}: {:?}",
            st.stage,
            st.figures.keys().collect::<Vec<_>>()
        )
    })
}
