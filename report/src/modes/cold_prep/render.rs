//! How cold-prep shows itself: the preparation tables, the rounds and the
//! sweep in summary.md, the speedup line on the console, and the cold-prep
//! and sweep plots ([`super::plots`]); the stages plot's `_wN` label and rounds grouped.

use super::Section;
use super::rounds::First;
use crate::chart::Figure;
use crate::doc::{Align::Left, Align::Right, Block, Blocks, Table};
use crate::fmt::{duration, mib_number as mib};
use crate::modes::ModeSection;
use crate::modes::Report;
use crate::modes::preparation::{ITEMS, Names, RECIPE};

impl Section {
    /// The names of this report's preparation.
    pub fn names(&self) -> Names {
        if self.items.is_some() { ITEMS } else { RECIPE }
    }

    /// "caches identical: true" or "outputs identical: true".
    pub fn identical_phrase(&self) -> String {
        match (self.caches_identical, self.outputs_identical) {
            (_, Some(o)) => format!("outputs identical: {o}"),
            (c, None) => format!("caches identical: {}", c.unwrap_or(false)),
        }
    }

    /// What one job prepared: "series" or "items".
    pub fn unit(&self) -> &'static str {
        if self.items.is_some() { "items" } else { "series" }
    }

    /// How many series or items each phase prepared.
    pub fn prepared(&self) -> u64 {
        match (&self.items, &self.counts) {
            (Some(i), _) => i.count,
            (None, Some(c)) => c.train_series,
            (None, None) => 0,
        }
    }

    /// What each phase prepared, as the console's line starts:
    /// "training series 25, frames 1000 (900 valid)" or "items 40".
    pub fn prepared_phrase(&self) -> String {
        match (&self.items, &self.counts) {
            (None, Some(c)) => {
                format!(
                    "training series {}, frames {} ({} valid)",
                    c.train_series, c.frames, c.valid_frames
                )
            }
            _ => format!("items {}", self.prepared()),
        }
    }

    /// The serial and parallel walls the speedup stands for: round 1's, or
    /// with rounds each one's median over rounds. With rounds the speedup
    /// is not their ratio but the median of each round's own ratio (a
    /// round's serial and parallel phases ran back to back, under the same
    /// conditions), so the console shows both, each named.
    pub fn walls(&self) -> (f64, f64) {
        if self.rounds.is_empty() {
            return (self.serial.wall_s, self.parallel.wall_s);
        }
        let median = |f: fn(&super::rounds::Round) -> f64| {
            crate::stats::median(&self.rounds.iter().map(f).collect::<Vec<_>>())
        };
        (median(|r| r.serial_wall_s), median(|r| r.parallel_wall_s))
    }

    /// "speedup 1.47x", with rounds "speedup 1.47x (median of 3 rounds,
    /// range 1.44-1.50, 75% coverage)", from 6 rounds "… 95% CI …": how
    /// every view states the speedup.
    pub fn speedup_phrase(&self) -> String {
        match self.speedup_interval {
            Some(i) if !self.rounds.is_empty() => format!(
                "speedup {:.2}x (median of {} rounds, {})",
                self.speedup,
                self.rounds.len(),
                i.phrase(|x| format!("{x:.2}"))
            ),
            _ => format!("speedup {:.2}x", self.speedup),
        }
    }
}

impl Section {
    /// What the preparation found, in the one sentence every view shows:
    /// what each phase prepared, the two walls the speedup stands for (with
    /// rounds, their medians and their ratio, which is not the speedup: that
    /// is the median of each round's own), the speedup, efficiency, load
    /// imbalance, and whether the outputs are identical.
    pub fn speedup_sentence(&self) -> String {
        let (serial_wall, parallel_wall) = self.walls();
        format!(
            "{}; serial {}, {} {}{}: {}, efficiency {:.0}%, load imbalance {:.2}; {}",
            self.prepared_phrase(),
            duration(serial_wall),
            match self.parallel.workers.len() {
                1 => "1 process".to_string(),
                n => format!("{n} processes"),
            },
            duration(parallel_wall),
            match self.rounds.is_empty() {
                true => String::new(),
                false => format!(" (medians, ratio {:.2}x)", serial_wall / parallel_wall),
            },
            self.speedup_phrase(),
            100.0 * self.parallel_efficiency,
            self.load_imbalance,
            self.identical_phrase()
        )
    }
}

impl ModeSection for Section {
    fn scan(&self) -> Option<&crate::modes::scan::Scan> {
        self.scan.as_ref()
    }

    fn blocks(&self, _r: &Report) -> Blocks {
        let prep = self;
        let (serial, parallel) = (&prep.serial, &prep.parallel);
        let mut out = Blocks::default();
        out.documents(Block::Heading("Cold preparation".into()));
        match (&prep.counts, &prep.items) {
            (Some(c), _) => out.documents(Block::Para(format!(
                "{} training series, {} samples, {} frames ({} valid).",
                c.train_series, c.samples, c.frames, c.valid_frames
            ))),
            (None, Some(i)) => out.documents(Block::Para(items_paragraph(prep, i))),
            (None, None) => {}
        }
        let per = format!("per-{} median", if prep.items.is_some() { "item" } else { "series" });
        let mut t = Table::new(&[
            ("preparation", Left),
            ("processes", Right),
            ("wall", Right),
            ("CPU", Right),
            ("peak RSS MiB", Right),
            (&per, Right),
            ("p95", Right),
        ]);
        for (name, side) in [("serial", serial), ("parallel", parallel)] {
            t.row(vec![
                name.into(),
                side.workers.len().to_string().into(),
                duration(side.wall_s).into(),
                duration(side.cpu_s).into(),
                mib(side.peak_rss_bytes).into(),
                duration(side.per_series_s.median).into(),
                duration(side.per_series_s.p95).into(),
            ]);
        }
        out.documents(Block::Table(t));
        let outputs = if prep.items.is_some() { "output directories" } else { "caches" };
        if !prep.rounds.is_empty() {
            out.documents(Block::Para(format!(
                "{} rounds, each into new {outputs}, serial first in odd rounds and parallel first in even ones; the table above is round 1. A later round's {outputs} were checked byte-identical to round 1's, then removed.",
                prep.rounds.len()
            )));
            let mut t = Table::new(&[
                ("round", Right),
                ("first", Left),
                ("serial wall", Right),
                ("parallel wall", Right),
                ("serial CPU", Right),
                ("parallel CPU", Right),
                ("speedup", Right),
            ]);
            for round in &prep.rounds {
                let first = match round.first {
                    First::Serial => "serial",
                    First::Parallel => "parallel",
                };
                t.row(vec![
                    round.round.to_string().into(),
                    first.into(),
                    duration(round.serial_wall_s).into(),
                    duration(round.parallel_wall_s).into(),
                    duration(round.serial_cpu_s).into(),
                    duration(round.parallel_cpu_s).into(),
                    format!("{:.2}x", round.speedup).into(),
                ]);
            }
            out.documents(Block::Table(t));
        }
        out.everywhere(Block::Para(prep.speedup_sentence()));
        if let Some(sw) = &prep.sweep {
            out.documents(Block::Subheading("Workers sweep".into()));
            out.documents(Block::Para(
                "The parallel preparation once per count in every round, beside the same serial one. Karp–Flatt's serial fraction stays flat when a fixed serial part limits the speedup, and grows when the loss grows with the count.".into(),
            ));
            let mut t = Table::new(&[
                ("processes", Right),
                ("wall", Right),
                ("speedup", Right),
                ("interval", Left),
                ("efficiency", Right),
                ("Karp–Flatt", Right),
            ]);
            for p in &sw.points {
                t.row(vec![
                    p.workers.to_string().into(),
                    duration(p.wall_s).into(),
                    format!("{:.2}x", p.speedup).into(),
                    p.speedup_interval
                        .map_or("–".to_string(), |i| i.cell(|x| format!("{x:.2}")))
                        .into(),
                    format!("{:.0}%", 100.0 * p.efficiency).into(),
                    p.karp_flatt.map_or("–".to_string(), |e| format!("{e:.3}")).into(),
                ]);
            }
            out.documents(Block::Table(t));
            out.documents(Block::Para(match (sw.amdahl.serial_fraction, sw.amdahl.speedup_limit) {
                (Some(f), Some(limit)) => format!(
                    "Amdahl's law fitted over the counts: serial fraction {f:.3}, so no count of processes passes {limit:.2}x."
                ),
                (Some(f), None) => format!(
                    "Amdahl's law fitted over the counts: serial fraction {f:.3}, no limit in sight."
                ),
                _ => "No Amdahl fit: no count above 1.".into(),
            }));
            if let Some(r) = sw.recommendation() {
                out.everywhere(Block::Para(format!("Workers sweep: recommendation: {r}.")));
            }
            if let Some(kf) = sw.karp_flatt_sentence() {
                out.everywhere(Block::Para(format!("Workers sweep: {kf}.")));
            }
        }
        if let Some(scan) = &prep.scan {
            let n = parallel.workers.len();
            out.documents(Block::Para(format!(
                "Each value of the scan ran its own serial and {n}-process preparations in every round; the table is its {n}-process phase over the rounds, and its tree peak the sum of each worker's."
            )));
            out.extend(crate::modes::scan::view::blocks(scan));
        }
        if let Some(storage) = &prep.storage {
            out.extend(storage.blocks(&prep.names(), parallel.workers.len()));
        }
        for w in &prep.warnings {
            out.everywhere(Block::Warning(w.clone()));
        }
        out
    }

    fn plots<'a>(&'a self, _r: &'a Report) -> Vec<Box<dyn Figure + 'a>> {
        let mut v: Vec<Box<dyn Figure + 'a>> = vec![Box::new(super::plots::PreparationPlot(self))];
        if let Some(sweep) = &self.sweep {
            v.push(Box::new(super::plots::SweepPlot(sweep)));
        }
        if let Some(scan) = &self.scan {
            v.push(Box::new(crate::modes::scan::view::ScanPlot(scan)));
        }
        v
    }

    fn timelined(&mut self) -> Vec<&mut crate::rundir::report::PrepSide> {
        vec![&mut self.serial, &mut self.parallel]
    }

    // A preparation phase is many processes: its record sums their CPU
    // and keeps the largest one's peak.
    fn stages_plot_note(&self) -> Option<&'static str> {
        Some(
            "a preparation phase: its wall, its processes' CPU summed, its largest process's peak RSS",
        )
    }

    /// The parallel phase carries its process count (`_w4`), the largest
    /// of a sweep, whatever its key in report.json.
    fn stage_label(&self, base: &str) -> Option<String> {
        let parallel = self.names().parallel;
        let count = match &self.sweep {
            Some(s) => s.points.iter().map(|p| p.workers).max().unwrap_or(1),
            None => self.parallel.workers.len() as u32,
        };
        (base == parallel).then(|| format!("{parallel}_w{count}"))
    }

    fn headline(&self) -> Option<String> {
        let what = if self.items.is_some() { "outputs" } else { "caches" };
        let same = self.caches_identical.or(self.outputs_identical).unwrap_or(false);
        let scan =
            self.scan.as_ref().map(|s| format!("; {}", crate::modes::scan::view::headline(s)));
        Some(format!(
            "speedup {:.2}x on {} processes; {what} {}{}",
            self.speedup,
            self.parallel.workers.len(),
            if same { "identical" } else { "DIFFER" },
            scan.unwrap_or_default()
        ))
    }

    fn has_rounds(&self) -> bool {
        true
    }
}

/// A user's own preparation (`--prepare`): what it ran over, said without
/// naming an item or a path.
fn items_paragraph(prep: &Section, i: &super::items::Summary) -> String {
    let mut s = format!(
        "A team's own preparation program over {} items (items file SHA-256 {}…), handed out {}; each process started the program once.",
        i.count,
        &i.items_sha256[..12.min(i.items_sha256.len())],
        match (i.largest_first(), i.weighted) {
            (true, _) => "largest weight first",
            (false, true) => "in file order (too many to sort by weight)",
            (false, false) => "in file order",
        }
    );
    let startups: Vec<f64> = prep
        .serial
        .workers
        .iter()
        .chain(&prep.parallel.workers)
        .filter_map(|w| w.startup_s)
        .collect();
    if !startups.is_empty() {
        s.push_str(&format!(
            " Start-up (spawn to ready) median {}, per process; per-item times run from handing an item over to its answer.",
            crate::fmt::duration(crate::stats::median(&startups))
        ));
    }
    // Where the N-process side's wall went at its end (round 1's).
    if let Some(st) = &prep.parallel.stragglers {
        let processes = prep.parallel.workers.len() as u32;
        s.push_str(&format!(" {}", st.slowest_sentence()));
        if let Some(tail) = st.tail_sentence(processes) {
            s.push_str(&format!(" {tail}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// summary.md's Amdahl sentence for each fit: a limit, no limit (a
    /// serial fraction of 0 or below), or no fit (no count above one).
    #[test]
    fn the_amdahl_sentence_states_the_limit_or_that_there_is_none() {
        let r: Report =
            serde_json::from_str(include_str!("../../render/fixtures/sweep-report.json")).unwrap();
        let crate::Section::ColdPrep(fixture) = r.section.clone() else {
            panic!("a cold-prep report")
        };
        let sentence = |serial_fraction: Option<f64>, speedup_limit: Option<f64>| {
            let mut c = fixture.clone();
            c.sweep.as_mut().expect("a sweep").amdahl =
                super::super::sweep::Amdahl { serial_fraction, speedup_limit };
            let mut s = String::new();
            c.blocks(&r).markdown(&mut s);
            let lines: Vec<&str> = s.lines().filter(|l| l.contains("Amdahl")).collect();
            assert_eq!(lines.len(), 1, "{lines:?}");
            lines[0].to_string()
        };
        assert_eq!(
            sentence(Some(0.25), Some(4.0)),
            "Amdahl's law fitted over the counts: serial fraction 0.250, so no count of processes passes 4.00x."
        );
        assert_eq!(
            sentence(Some(-0.01), None),
            "Amdahl's law fitted over the counts: serial fraction -0.010, no limit in sight."
        );
        assert_eq!(sentence(None, None), "No Amdahl fit: no count above 1.");
    }
}
