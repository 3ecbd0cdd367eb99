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
    if runs.is_empty() {
        return None;
    }
    let walls: Vec<f64> = runs.iter().map(|r| r.end_s - r.start_s).collect();
    let median_s = crate::stats::median(&walls);
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| walls[b].total_cmp(&walls[a]).then(runs[a].line.cmp(&runs[b].line)));
    let slowest = order
        .iter()
        .take(KEPT)
        .map(|&i| Slow {
            line: runs[i].line,
            wall_s: walls[i],
            // Over a microsecond at least: a ratio to nothing is no figure.
            times_median: walls[i] / median_s.max(1e-6),
        })
        .collect();
    Some(Stragglers { items: runs.len() as u64, median_s, slowest, tail: tail(runs, processes) })
}

fn tail(runs: &[ItemRun], processes: u32) -> Option<Tail> {
    if processes < 2 {
        return None;
    }
    let mut last: std::collections::BTreeMap<u32, f64> = Default::default();
    for r in runs {
        let e = last.entry(r.rank).or_insert(r.end_s);
        *e = e.max(r.end_s);
    }
    let first = runs.iter().map(|r| r.start_s).fold(f64::INFINITY, f64::min);
    let end = runs.iter().map(|r| r.end_s).fold(f64::NEG_INFINITY, f64::max);
    // A process that ran no item was idle from the start.
    let from = match last.len() < processes as usize {
        true => first,
        false => last.values().copied().fold(f64::INFINITY, f64::min),
    };
    Some(Tail {
        from_s: from - first,
        tail_s: end - from,
        items_s: end - first,
        items: runs.iter().filter(|r| r.end_s > from).count() as u64,
    })
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
        assert!((s.slowest[0].times_median - 50.0).abs() < 1e-9, "{s:?}");
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

    /// A process that got no item was idle from the first item's start.
    #[test]
    fn a_process_without_items_was_idle_from_the_start() {
        let runs = vec![run(1, 0, 0.0, 1.0), run(2, 0, 1.0, 2.0)];
        let t = of(&runs, 2).unwrap().tail.unwrap();
        assert_eq!((t.from_s, t.tail_s, t.items), (0.0, 2.0, 2));
    }
}
