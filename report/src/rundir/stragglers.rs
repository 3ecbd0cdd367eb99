//! A preparation phase's slowest items and its tail (`--prepare`, a side's
//! `stragglers` in report.json): which
//! items took longest against the phase's median, named by their line in
//! the items file (never by id), and how long the last items ran alone
//! once the first process had run out of items, which is what bounds a
//! parallel phase's wall when an item is slow.

use serde::{Deserialize, Serialize};

/// An item is a straggler when it took this many times the phase's median
/// item or more.
pub const RATIO: f64 = 3.0;
/// The slowest items kept, slowest first.
pub const KEPT: usize = 5;
/// A tail is said to bound the wall when it is this share of the time the
/// items took or more, and [`RATIO`] median items or more (a shorter one is
/// the items' own grain: the last item of each process ends somewhere).
pub const TAIL_SHARE: f64 = 0.1;

/// One item as the phase ran it: its line in the items file, the process
/// that ran it, and when, in seconds from the phase's start (its end when
/// its answer arrived, its start that minus its own wall time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItemRun {
    pub line: u64,
    pub rank: u32,
    pub start_s: f64,
    pub end_s: f64,
}

/// What report.json says of a phase's items' times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stragglers {
    /// Items in the phase (the `of` of "item 37 of 200").
    pub items: u64,
    /// The median item's wall, seconds.
    pub median_s: f64,
    /// The slowest items (at most [`KEPT`]), slowest first, stragglers or
    /// not: each is one when `times_median` is [`RATIO`] or more.
    pub slowest: Vec<Slow>,
    /// The phase's end: from when the first process ran out of items to the
    /// last answer. None for one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<Tail>,
}

/// One of the slowest items.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Slow {
    /// Its line in the items file (1-based).
    pub line: u64,
    pub wall_s: f64,
    /// Its wall over the phase's median item's.
    pub times_median: f64,
}

/// The end of a phase with several processes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tail {
    /// When the first process answered its last item, seconds from the
    /// first item's start.
    pub from_s: f64,
    /// From then to the last answer, seconds.
    pub tail_s: f64,
    /// From the first item's start to the last answer, seconds.
    pub items_s: f64,
    /// Items still running or started after `from_s`.
    pub items: u64,
}

/// The slowest items and the tail of `runs`, run by `processes` processes.
/// None for no item.
pub fn of(runs: &[ItemRun], processes: u32) -> Option<Stragglers> {
    let mut fold = Fold::default();
    runs.iter().for_each(|r| fold.add(*r));
    fold.finish(processes)
}

/// The most recent ends a process keeps for the tail: once the first
/// process runs out of items the queue is empty, so every other process
/// ends at most the item it holds after that (one, or a prefetch window).
const RECENT: usize = 16;

/// A phase's items folded one at a time in fixed memory, whatever their
/// count: the items' walls as a log-bucket histogram (so the median is
/// within 1/128 of a wall that occurred, [`protocol::spans`]), the
/// [`KEPT`] slowest, and per process its last `RECENT` (16) ends. Folds of
/// different processes merge.
#[derive(Clone, Debug)]
pub struct Fold {
    items: u64,
    walls: protocol::spans::SpanSummary,
    slowest: Vec<ItemRun>,
    ends: std::collections::BTreeMap<u32, std::collections::VecDeque<f64>>,
    first_start: f64,
    last_end: f64,
}

impl Default for Fold {
    fn default() -> Fold {
        Fold {
            items: 0,
            walls: protocol::spans::SpanSummary::new("item"),
            slowest: Vec::new(),
            ends: Default::default(),
            first_start: f64::INFINITY,
            last_end: f64::NEG_INFINITY,
        }
    }
}

/// Slowest first; of equal walls, the earlier line.
fn slower(a: &ItemRun, b: &ItemRun) -> std::cmp::Ordering {
    (b.end_s - b.start_s).total_cmp(&(a.end_s - a.start_s)).then(a.line.cmp(&b.line))
}

impl Fold {
    pub fn add(&mut self, r: ItemRun) {
        self.items += 1;
        self.walls.add_call(r.end_s - r.start_s, f64::INFINITY);
        self.keep_slowest(std::iter::once(r));
        let ends = self.ends.entry(r.rank).or_default();
        ends.push_back(r.end_s);
        if ends.len() > RECENT {
            ends.pop_front();
        }
        self.first_start = self.first_start.min(r.start_s);
        self.last_end = self.last_end.max(r.end_s);
    }

    /// Adds another process's (or phase part's) items.
    pub fn merge(&mut self, other: &Fold) {
        self.items += other.items;
        self.walls.merge(&other.walls);
        self.keep_slowest(other.slowest.iter().copied());
        for (rank, ends) in &other.ends {
            let mine = self.ends.entry(*rank).or_default();
            mine.extend(ends);
            mine.make_contiguous().sort_by(f64::total_cmp);
            while mine.len() > RECENT {
                mine.pop_front();
            }
        }
        self.first_start = self.first_start.min(other.first_start);
        self.last_end = self.last_end.max(other.last_end);
    }

    fn keep_slowest(&mut self, runs: impl Iterator<Item = ItemRun>) {
        self.slowest.extend(runs);
        self.slowest.sort_by(slower);
        self.slowest.truncate(KEPT);
    }

    /// The items folded so far.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The items' walls: count, sum, min, max and quantiles.
    pub fn walls(&self) -> &protocol::spans::SpanSummary {
        &self.walls
    }

    /// n, min, median, p95 and max of the items' walls: min and max exact,
    /// the quantiles within [`protocol::spans::RESOLUTION`] of a wall that
    /// occurred.
    pub fn distribution(&self) -> crate::stats::Distribution {
        let w = &self.walls;
        match w.calls {
            0 => crate::stats::distribution(&[]),
            n => crate::stats::Distribution {
                n,
                min: w.min_s,
                median: w.quantile(0.5),
                p95: w.quantile(0.95),
                max: w.max_s,
            },
        }
    }

    /// What report.json says of them, for `processes` processes; None for
    /// no item.
    pub fn finish(&self, processes: u32) -> Option<Stragglers> {
        if self.items == 0 {
            return None;
        }
        let median_s = self.walls.quantile(0.5);
        let slowest = self
            .slowest
            .iter()
            .map(|r| Slow {
                line: r.line,
                wall_s: r.end_s - r.start_s,
                // Over a microsecond at least: a ratio to nothing is no figure.
                times_median: (r.end_s - r.start_s) / median_s.max(1e-6),
            })
            .collect();
        Some(Stragglers { items: self.items, median_s, slowest, tail: self.tail(processes) })
    }

    fn tail(&self, processes: u32) -> Option<Tail> {
        if processes < 2 {
            return None;
        }
        let (first, end) = (self.first_start, self.last_end);
        let last = |ends: &std::collections::VecDeque<f64>| {
            ends.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        };
        // A process that ran no item was idle from the start, and every
        // item ran after it ran out.
        let (from, items) = match self.ends.len() < processes as usize {
            true => (first, self.items),
            false => {
                let from = self.ends.values().map(last).fold(f64::INFINITY, f64::min);
                let after = self.ends.values().flatten().filter(|e| **e > from).count();
                (from, after as u64)
            }
        };
        Some(Tail { from_s: from - first, tail_s: end - from, items_s: end - first, items })
    }
}

impl Stragglers {
    /// The slowest items, for a person: "item 37 of 200 took 512 ms, 41×
    /// the median (12.4 ms); …", or that none took [`RATIO`]× the median.
    pub fn slowest_sentence(&self) -> String {
        let d = crate::fmt::duration;
        let n = self.items;
        let named: Vec<String> = self
            .slowest
            .iter()
            .filter(|s| s.times_median >= RATIO)
            .map(|s| format!("item {} of {n} took {}, {:.0}×", s.line, d(s.wall_s), s.times_median))
            .collect();
        match (named.is_empty(), self.slowest.first()) {
            (false, _) => {
                format!("Stragglers: {} the median item ({}).", named.join("; "), d(self.median_s))
            }
            (true, Some(s)) => format!(
                "No item took {RATIO:.0}× the median item ({}) or more: the slowest, item {} of {n}, took {} ({:.1}×).",
                d(self.median_s),
                s.line,
                d(s.wall_s),
                s.times_median
            ),
            (true, None) => String::new(),
        }
    }

    /// The tail, for a person: whether the last items bound the wall.
    pub fn tail_sentence(&self, processes: u32) -> Option<String> {
        let t = self.tail.as_ref()?;
        let d = crate::fmt::duration;
        let share = if t.items_s > 0.0 { t.tail_s / t.items_s } else { 0.0 };
        Some(match share >= TAIL_SHARE && t.tail_s >= RATIO * self.median_s {
            true => format!(
                "The last {} item(s) ran alone for {} of the {} the items took ({:.0}%): once the first of {processes} processes ran out of items at {}, the rest waited on them, so they bound the parallel wall{}.",
                t.items,
                d(t.tail_s),
                d(t.items_s),
                100.0 * share,
                d(t.from_s),
                match self.slowest.first().filter(|s| s.times_median >= RATIO) {
                    Some(_) =>
                        "; handing the slowest out first (a weight in the items file) lets the others run beside them",
                    None => "",
                }
            ),
            false => format!(
                "The {processes} processes ran out of items within {} of one another ({:.0}% of the {} the items took, {:.1} median items): no item bounds the parallel wall.",
                d(t.tail_s),
                100.0 * share,
                d(t.items_s),
                if self.median_s > 0.0 { t.tail_s / self.median_s } else { 0.0 }
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: u64, rank: u32, start_s: f64, end_s: f64) -> ItemRun {
        ItemRun { line, rank, start_s, end_s }
    }

    /// 40 items of 10 ms on two processes, item 37 of 500 ms handed out
    /// last: it is named first at 50× the median, and it ran alone at the
    /// end, bounding the wall.
    #[test]
    fn a_slow_last_item_is_named_by_its_line_and_bounds_the_wall() {
        let mut runs = Vec::new();
        let (mut a, mut b) = (0.0, 0.0);
        for line in 1..=40u64 {
            let (clock, rank) = if a <= b { (&mut a, 0) } else { (&mut b, 1) };
            let wall = if line == 37 { 0.5 } else { 0.01 };
            runs.push(run(line, rank, *clock, *clock + wall));
            *clock += wall;
        }
        let s = of(&runs, 2).unwrap();
        assert_eq!(s.items, 40);
        assert_eq!(s.slowest[0].line, 37);
        // The median is the histogram's, within 1/128 of a wall that occurred.
        assert!((s.slowest[0].times_median - 50.0).abs() < 50.0 / 128.0, "{s:?}");
        assert!(s.slowest[1].times_median < RATIO);
        let said = s.slowest_sentence();
        assert!(said.starts_with("Stragglers: item 37 of 40 took 500"), "{said}");
        assert!(!said.contains("item 1 of"), "only stragglers are named: {said}");
        let t = s.tail.as_ref().unwrap();
        assert!(t.tail_s > 0.4 && t.items >= 1, "{t:?}");
        let tail = s.tail_sentence(2).unwrap();
        assert!(tail.contains("bound the parallel wall"), "{tail}");
    }

    /// Equal items: no straggler, and a tail of less than one item's time
    /// bounds nothing. One process has no tail.
    #[test]
    fn equal_items_name_no_straggler_and_no_tail() {
        let runs: Vec<ItemRun> = (0..40u64)
            .map(|i| run(i + 1, (i % 2) as u32, (i / 2) as f64 * 0.01, (i / 2 + 1) as f64 * 0.01))
            .collect();
        let s = of(&runs, 2).unwrap();
        assert!(s.slowest_sentence().starts_with("No item took 3× the median"), "{s:?}");
        let tail = s.tail_sentence(2).unwrap();
        assert!(tail.contains("no item bounds the parallel wall"), "{tail}");
        assert_eq!(of(&runs, 1).unwrap().tail, None);
        // Four items on two processes, one a little late: the tail is a
        // third of the time but one item long, the items' grain.
        let few = vec![
            run(1, 0, 0.0, 1.0),
            run(2, 1, 0.0, 1.0),
            run(3, 0, 1.0, 2.0),
            run(4, 1, 1.0, 2.5),
        ];
        let s = of(&few, 2).unwrap();
        assert!(s.tail.as_ref().unwrap().tail_s / s.tail.as_ref().unwrap().items_s > TAIL_SHARE);
        assert!(s.tail_sentence(2).unwrap().contains("no item bounds"), "{s:?}");
        assert_eq!(of(&[], 2), None);
    }

    /// Each process folding its own items and the folds merged give what
    /// one fold of all gives, and a fold of 10⁵ items holds no more than
    /// one of 40: its histogram (eight walls, eight buckets), five items
    /// and sixteen ends a process.
    #[test]
    fn folds_of_each_process_merge_into_the_phases_and_stay_small() {
        let mut runs = Vec::new();
        let mut clock = [0.0f64; 3];
        for line in 1..=100_000u64 {
            let rank = (line % 3) as u32;
            let wall = 0.001 * (1 + line % 7) as f64 + if line == 99_990 { 2.0 } else { 0.0 };
            let c = &mut clock[rank as usize];
            runs.push(run(line, rank, *c, *c + wall));
            *c += wall;
        }
        let whole = of(&runs, 3).unwrap();
        let mut parts: Vec<Fold> = vec![Fold::default(); 3];
        for r in &runs {
            parts[r.rank as usize].add(*r);
        }
        let mut merged = Fold::default();
        parts.iter().for_each(|p| merged.merge(p));
        assert_eq!(merged.finish(3).unwrap(), whole);
        assert_eq!(whole.items, 100_000);
        assert_eq!(whole.slowest[0].line, 99_990);
        assert!(whole.tail.as_ref().unwrap().items >= 1, "{whole:?}");
        assert!(merged.slowest.len() == KEPT && merged.ends.values().all(|e| e.len() <= RECENT));
        assert!(merged.walls.buckets.len() <= 8, "{:?}", merged.walls.buckets);
    }

    /// A process that got no item was idle from the first item's start.
    #[test]
    fn a_process_without_items_was_idle_from_the_start() {
        let runs = vec![run(1, 0, 0.0, 1.0), run(2, 0, 1.0, 2.0)];
        let t = of(&runs, 2).unwrap().tail.unwrap();
        assert_eq!((t.from_s, t.tail_s, t.items), (0.0, 2.0, 2));
    }
}
