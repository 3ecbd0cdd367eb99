//! How a recipe run shows itself: each stage's time by component, what it
//! reused or rebuilt, and the state it left, in summary.md.

use super::{Section, label};
use crate::fmt::{duration, mib_number as mib};
use crate::modes::ModeSection;
use crate::modes::Report;
use std::fmt::Write as _;

impl ModeSection for Section {
    fn summary(&self, r: &Report, s: &mut String) {
        let state = &self.state;
        let _ = writeln!(s, "\n## Recipe state\n");
        let components = ["record_check", "integrity", "load", "restore", "recompute", "work"];
        let _ = writeln!(
            s,
            "| stage | {} | reused | built | rebuilt |",
            components.iter().map(|c| label(c)).collect::<Vec<_>>().join(" | ")
        );
        let _ = writeln!(s, "|---|{}---:|---:|---:|", "---:|".repeat(components.len()));
        for (key, st) in r.ordered() {
            let f = |k: &str| st.figures.get(k).copied();
            let cells: Vec<String> = components
                .iter()
                .map(|c| f(&format!("component:{c}_s")).map_or("–".into(), duration))
                .collect();
            let count = |k: &str| f(k).map_or("–".into(), |v| format!("{v:.0}"));
            let _ = writeln!(
                s,
                "| `{key}` | {} | {} | {} | {} |",
                cells.join(" | "),
                count("reused"),
                count("prepared"),
                count("rebuilt")
            );
        }
        let _ = writeln!(
            s,
            "\nThe state directory as the run left it: {} files, {} MiB, digest `{}`.",
            state.files,
            mib(state.bytes),
            &state.sha256[..12.min(state.sha256.len())]
        );
    }
}
