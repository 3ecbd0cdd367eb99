//! The order of probes over a first-parent history `commits[0..=n]`
//! (`commits[0]` good, `commits[n]` bad): the commit nearest the middle of
//! the range still open, skipping those found unclear or skipped (as `git
//! bisect skip` does), until no commit inside the range is left to probe.

use super::ProbeVerdict;
use std::collections::BTreeMap;

/// What the probes so far say, by position.
#[derive(Debug, Default)]
pub struct Search {
    n: usize,
    found: BTreeMap<usize, ProbeVerdict>,
}

/// Where a search ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The first bad commit's position.
    FirstBad(usize),
    /// It is one of these (unclear or skipped commits between the last
    /// good and the first bad), in order, the first bad one last.
    OneOf(Vec<usize>),
}

impl Search {
    /// A search over `len` commits, the first good and the last bad.
    pub fn new(len: usize) -> Search {
        assert!(len >= 2, "a search needs its two endpoints");
        let mut found = BTreeMap::new();
        found.insert(0, ProbeVerdict::Good);
        found.insert(len - 1, ProbeVerdict::Bad);
        Search { n: len - 1, found }
    }

    /// The last known good and the first known bad position.
    fn range(&self) -> (usize, usize) {
        let good = self.found.iter().filter(|(_, v)| **v == ProbeVerdict::Good).map(|(k, _)| *k);
        let lo = good.max().unwrap_or(0);
        let hi = self
            .found
            .iter()
            .filter(|(k, v)| **v == ProbeVerdict::Bad && **k > lo)
            .map(|(k, _)| *k)
            .min()
            .unwrap_or(self.n);
        (lo, hi)
    }

    /// The next position to probe, or None when the search has ended.
    pub fn next(&self) -> Option<usize> {
        let (lo, hi) = self.range();
        let mid = (lo + hi) / 2;
        (lo + 1..hi).filter(|k| !self.found.contains_key(k)).min_by_key(|k| (k.abs_diff(mid), *k))
    }

    /// Records what a probe found.
    pub fn record(&mut self, position: usize, verdict: ProbeVerdict) {
        self.found.insert(position, verdict);
    }

    /// Where the search ended; None while a commit is left to probe. An
    /// answer carries its doubt: an unclear commit next to the boundary
    /// (just below its last good commit, or just above its first bad one)
    /// may mean that side was misread, so the answer is the set from it to
    /// the boundary ("one of 11, 12, 13"), never one commit.
    pub fn ended(&self) -> Option<Ended> {
        if self.next().is_some() {
            return None;
        }
        let (lo, hi) = self.range();
        let unclear = |k: usize| self.found.get(&k) == Some(&ProbeVerdict::Unclear);
        let mut from = lo + 1;
        while from >= 2 && unclear(from - 2) {
            from -= 2;
            // From the unclear one up: the good commit above it is in doubt too.
            while from >= 1 && unclear(from - 1) {
                from -= 1;
            }
        }
        let mut to = hi;
        while to < self.n && unclear(to + 1) {
            to += 1;
        }
        Some(match (from, to) {
            (f, t) if f == t => Ended::FirstBad(t),
            (f, t) => Ended::OneOf((f..=t).collect()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search whose probes answer by `truth` (None: unclear).
    fn run(len: usize, truth: impl Fn(usize) -> Option<ProbeVerdict>) -> (Ended, Vec<usize>) {
        let mut s = Search::new(len);
        let mut probed = Vec::new();
        while let Some(k) = s.next() {
            assert!(!probed.contains(&k), "{k} probed twice");
            probed.push(k);
            s.record(k, truth(k).unwrap_or(ProbeVerdict::Unclear));
        }
        (s.ended().expect("no probe left"), probed)
    }

    #[test]
    fn every_first_bad_commit_is_found_in_log2_probes() {
        for len in 2..40 {
            for first_bad in 1..len {
                let truth = |k: usize| {
                    Some(if k >= first_bad { ProbeVerdict::Bad } else { ProbeVerdict::Good })
                };
                let (ended, probed) = run(len, truth);
                assert_eq!(ended, Ended::FirstBad(first_bad), "len {len}");
                let most = (len as f64 - 1.0).log2().ceil() as usize;
                assert!(probed.len() <= most, "len {len} bad {first_bad}: {probed:?}");
            }
        }
    }

    #[test]
    fn a_skipped_commit_is_stepped_around_and_named_when_it_hides_the_answer() {
        // 17 commits, the 11th (position 10) bad, the 9th (position 8) skipped.
        let truth = |k: usize| match k {
            8 => Some(ProbeVerdict::Skipped),
            k => Some(if k >= 10 { ProbeVerdict::Bad } else { ProbeVerdict::Good }),
        };
        let (ended, probed) = run(17, truth);
        assert_eq!(ended, Ended::FirstBad(10));
        assert!(probed.contains(&8) && probed.len() <= 5, "{probed:?}");
        // The skipped commit just before the first bad one: either may be it.
        let truth = |k: usize| match k {
            9 => None,
            k => Some(if k >= 10 { ProbeVerdict::Bad } else { ProbeVerdict::Good }),
        };
        assert_eq!(run(17, truth).0, Ended::OneOf(vec![9, 10]));
    }

    /// An unclear commit next to the boundary leaves the answer a set:
    /// below it (issue 63: 11 unclear, 12 read good, 13 bad) or above it;
    /// one further away does not.
    #[test]
    fn an_unclear_neighbour_of_the_boundary_makes_the_answer_a_set() {
        let mut s = Search::new(17);
        for (k, v) in [
            (8, ProbeVerdict::Good),
            (12, ProbeVerdict::Good),
            (11, ProbeVerdict::Unclear),
            (13, ProbeVerdict::Bad),
            (10, ProbeVerdict::Good),
            (9, ProbeVerdict::Good),
        ] {
            s.record(k, v);
        }
        assert_eq!(s.next(), None);
        assert_eq!(s.ended(), Some(Ended::OneOf(vec![11, 12, 13])));
        let mut s = Search::new(17);
        for (k, v) in [(8, ProbeVerdict::Good), (9, ProbeVerdict::Bad), (10, ProbeVerdict::Unclear)]
        {
            s.record(k, v);
        }
        assert_eq!(s.ended(), Some(Ended::OneOf(vec![9, 10])));
        let mut s = Search::new(17);
        for (k, v) in [
            (8, ProbeVerdict::Good),
            (6, ProbeVerdict::Unclear),
            (7, ProbeVerdict::Good),
            (9, ProbeVerdict::Bad),
        ] {
            s.record(k, v);
        }
        assert_eq!(
            s.ended(),
            Some(Ended::FirstBad(9)),
            "an unclear commit two below is no neighbour"
        );
    }

    #[test]
    fn two_endpoints_alone_end_at_once() {
        assert_eq!(Search::new(2).next(), None);
        assert_eq!(Search::new(2).ended(), Some(Ended::FirstBad(1)));
    }
}
