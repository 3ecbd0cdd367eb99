//! How a recipe run shows itself: each stage's time by component, what it
//! reused or rebuilt, and the state it left, in summary.md.

use super::{Section, label};
use crate::doc::{Align, Block, Blocks, Cell, Table};
use crate::fmt::{duration, mib_number as mib};
use crate::modes::ModeSection;
use crate::modes::Report;

impl ModeSection for Section {
    fn blocks(&self, r: &Report) -> Blocks {
        let state = &self.state;
        let mut out = Blocks::default();
        out.documents(Block::Heading("Recipe state".into()));
        let components = ["record_check", "integrity", "load", "restore", "recompute", "work"];
        let mut columns: Vec<(&str, Align)> = vec![("stage", Align::Left)];
        columns.extend(components.iter().map(|c| (label(c), Align::Right)));
        columns.extend([
            ("reused", Align::Right),
            ("built", Align::Right),
            ("rebuilt", Align::Right),
        ]);
        let mut t = Table::new(&columns);
        for (key, st) in r.ordered() {
            let f = |k: &str| st.figures.get(k).copied();
            let count = |k: &str| Cell::from(f(k).map_or("–".into(), |v| format!("{v:.0}")));
            let mut row = vec![Cell::code(key.as_str())];
            row.extend(
                components.iter().map(|c| {
                    Cell::from(f(&format!("component:{c}_s")).map_or("–".into(), duration))
                }),
            );
            row.extend([count("reused"), count("prepared"), count("rebuilt")]);
            t.row(row);
        }
        out.documents(Block::Table(t));
        out.documents(Block::Para(format!(
            "The state directory as the run left it: {} files, {} MiB, digest `{}`.",
            state.files,
            mib(state.bytes),
            &state.sha256[..12.min(state.sha256.len())]
        )));
        out
    }
}
