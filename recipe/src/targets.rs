//! Training targets from a series' events (the event-candidate policy), and
//! the contexts a model trains on. Part of the versioned feature contract
//! (docs/feature-contract.md, "Targets and contexts").
//!
//! Per sample: 1 (asleep) on `[onset, wakeup)` of each night that is a clean
//! pair, 0 (awake) between one such night's wakeup and the next night's
//! onset, −1 (unknown) everywhere else. A frame's target is its last
//! sample's. A context is a block of [`CONTEXT_FRAMES`] frames from frame 0;
//! it is eligible when every frame in it is valid and has a known target.

use crate::contract::{FRAME_SAMPLES, FRAME_STRIDE};
use crate::events::{Event, Kind};
use std::collections::BTreeMap;

pub const SLEEP: i8 = 1;
pub const WAKE: i8 = 0;
pub const UNKNOWN: i8 = -1;
/// Frames per context (non-overlapping blocks from frame 0; tails dropped).
pub const CONTEXT_FRAMES: usize = 240;

/// A step that makes the whole series' targets unknown.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("night {night}: step {step} is not a whole number in [0, {samples})")]
pub struct InvalidStep {
    pub night: u32,
    pub step: f64,
    pub samples: usize,
}

struct Night {
    onsets: Vec<Option<u64>>,
    wakeups: Vec<Option<u64>>,
}

impl Night {
    /// `[min, max]` of the night's located (present) steps.
    fn bounds(&self) -> Option<(u64, u64)> {
        let steps = self.onsets.iter().chain(&self.wakeups).flatten();
        let min = steps.clone().min()?;
        Some((*min, *steps.max()?))
    }

    /// (onset, wakeup) when the night has exactly one of each, both with a
    /// step, the onset first.
    fn pair(&self) -> Option<(u64, u64)> {
        match (self.onsets.as_slice(), self.wakeups.as_slice()) {
            ([Some(on)], [Some(off)]) if on < off => Some((*on, *off)),
            _ => None,
        }
    }
}

/// Per-sample labels of one series from its events (any order).
pub fn sample_labels(events: &[&Event], samples: usize) -> Result<Vec<i8>, InvalidStep> {
    let mut nights: BTreeMap<u32, Night> = BTreeMap::new();
    for e in events {
        let step = match e.step {
            None => None,
            Some(x) if x.is_finite() && x.fract() == 0.0 && x >= 0.0 && x < samples as f64 => {
                Some(x as u64)
            }
            Some(x) => return Err(InvalidStep { night: e.night, step: x, samples }),
        };
        let night = nights
            .entry(e.night)
            .or_insert_with(|| Night { onsets: Vec::new(), wakeups: Vec::new() });
        match e.kind {
            Kind::Onset => night.onsets.push(step),
            Kind::Wakeup => night.wakeups.push(step),
        }
    }
    // Nights whose located steps overlap another night's are dropped, both.
    let bounds: Vec<(u32, (u64, u64))> =
        nights.iter().filter_map(|(n, night)| Some((*n, night.bounds()?))).collect();
    let mut dropped = std::collections::BTreeSet::new();
    for (i, (a, (a0, a1))) in bounds.iter().enumerate() {
        for (b, (b0, b1)) in &bounds[i + 1..] {
            if a0 <= b1 && b0 <= a1 {
                dropped.insert(*a);
                dropped.insert(*b);
            }
        }
    }
    let pairs: BTreeMap<u32, (u64, u64)> = nights
        .iter()
        .filter(|(n, _)| !dropped.contains(*n))
        .filter_map(|(n, night)| Some((*n, night.pair()?)))
        .collect();
    let mut labels = vec![UNKNOWN; samples];
    for (night, (onset, wakeup)) in &pairs {
        labels[*onset as usize..*wakeup as usize].fill(SLEEP);
        if let Some((next_onset, _)) = night.checked_add(1).and_then(|n| pairs.get(&n)) {
            if wakeup < next_onset {
                labels[*wakeup as usize..*next_onset as usize].fill(WAKE);
            }
        }
    }
    Ok(labels)
}

/// Each frame's target: the label of its last sample.
pub fn frame_targets(labels: &[i8], frames: usize) -> Vec<i8> {
    (0..frames).map(|f| labels[f * FRAME_STRIDE + FRAME_SAMPLES - 1]).collect()
}

/// Indices of the eligible contexts of a series: blocks of
/// [`CONTEXT_FRAMES`] frames from frame 0 whose frames are all valid and all
/// have a known target. An incomplete tail is never a context.
pub fn eligible_contexts(valid: &[bool], targets: &[i8]) -> Vec<u32> {
    assert_eq!(valid.len(), targets.len(), "one target per frame");
    let blocks = valid.len() / CONTEXT_FRAMES;
    (0..blocks)
        .filter(|b| {
            let r = b * CONTEXT_FRAMES..(b + 1) * CONTEXT_FRAMES;
            valid[r.clone()].iter().all(|v| *v) && targets[r].iter().all(|t| *t != UNKNOWN)
        })
        .map(|b| b as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(night: u32, kind: Kind, step: Option<f64>) -> Event {
        Event { series_id: "s".into(), night, kind, step }
    }

    fn labels(events: &[Event], samples: usize) -> Result<Vec<i8>, InvalidStep> {
        sample_labels(&events.iter().collect::<Vec<_>>(), samples)
    }

    #[test]
    fn clean_nights_give_sleep_and_the_wake_between_consecutive_nights() {
        let events = [
            ev(1, Kind::Onset, Some(2.0)),
            ev(1, Kind::Wakeup, Some(5.0)),
            ev(2, Kind::Onset, Some(8.0)),
            ev(2, Kind::Wakeup, Some(10.0)),
        ];
        let l = labels(&events, 12).unwrap();
        assert_eq!(l, [-1, -1, 1, 1, 1, 0, 0, 0, 1, 1, -1, -1]);
    }

    #[test]
    fn a_missing_event_or_a_gap_in_night_numbers_leaves_samples_unknown() {
        // Night 2 has no wakeup step: no pair, so no wake run from night 1 to it.
        let events = [
            ev(1, Kind::Onset, Some(1.0)),
            ev(1, Kind::Wakeup, Some(3.0)),
            ev(2, Kind::Onset, Some(6.0)),
            ev(2, Kind::Wakeup, None),
            ev(4, Kind::Onset, Some(8.0)),
            ev(4, Kind::Wakeup, Some(9.0)),
        ];
        let l = labels(&events, 11).unwrap();
        assert_eq!(l, [-1, 1, 1, -1, -1, -1, -1, -1, 1, -1, -1]);
    }

    #[test]
    fn two_onsets_or_a_wakeup_first_is_not_a_pair() {
        let events = [
            ev(1, Kind::Onset, Some(1.0)),
            ev(1, Kind::Onset, Some(2.0)),
            ev(1, Kind::Wakeup, Some(3.0)),
            ev(2, Kind::Onset, Some(7.0)),
            ev(2, Kind::Wakeup, Some(5.0)),
        ];
        assert!(labels(&events, 10).unwrap().iter().all(|l| *l == UNKNOWN));
    }

    #[test]
    fn overlapping_nights_are_both_dropped_bounds_inclusive() {
        // Night 2's located steps start where night 1's end (inclusive overlap).
        let events = [
            ev(1, Kind::Onset, Some(1.0)),
            ev(1, Kind::Wakeup, Some(4.0)),
            ev(2, Kind::Onset, Some(4.0)),
            ev(2, Kind::Wakeup, Some(6.0)),
            ev(3, Kind::Onset, Some(8.0)),
            ev(3, Kind::Wakeup, Some(9.0)),
        ];
        let l = labels(&events, 10).unwrap();
        assert_eq!(l, [-1, -1, -1, -1, -1, -1, -1, -1, 1, -1]);
        // A night that is not a pair still drops a night it overlaps.
        let events = [
            ev(1, Kind::Onset, Some(1.0)),
            ev(1, Kind::Wakeup, Some(4.0)),
            ev(2, Kind::Onset, Some(3.0)),
            ev(2, Kind::Wakeup, None),
        ];
        assert!(labels(&events, 6).unwrap().iter().all(|l| *l == UNKNOWN));
    }

    #[test]
    fn a_step_that_is_not_a_whole_in_range_number_invalidates_the_series() {
        for bad in [2.5, -1.0, 10.0, f64::NAN, f64::INFINITY] {
            let events = [ev(1, Kind::Onset, Some(bad)), ev(1, Kind::Wakeup, Some(3.0))];
            let e = labels(&events, 10).unwrap_err();
            assert_eq!(e.night, 1);
        }
        let events = [ev(1, Kind::Onset, Some(9.0)), ev(1, Kind::Wakeup, Some(0.0))];
        assert!(labels(&events, 10).is_ok(), "9 and 0 are in range");
    }

    #[test]
    fn a_frame_takes_its_last_samples_label() {
        let mut l = vec![UNKNOWN; 30];
        l[11] = SLEEP; // last sample of frame 0
        l[17] = WAKE; // last sample of frame 1
        l[16] = SLEEP;
        assert_eq!(frame_targets(&l, 3), [SLEEP, WAKE, UNKNOWN]);
    }

    #[test]
    fn contexts_are_whole_valid_known_blocks_from_frame_zero() {
        let n = CONTEXT_FRAMES * 3 + 100;
        let mut valid = vec![true; n];
        let mut targets = vec![SLEEP; n];
        valid[CONTEXT_FRAMES + 5] = false; // block 1 has an invalid frame
        targets[3 * CONTEXT_FRAMES + 1] = UNKNOWN; // in the tail: irrelevant
        assert_eq!(eligible_contexts(&valid, &targets), [0, 2]);
        targets[2 * CONTEXT_FRAMES + CONTEXT_FRAMES - 1] = UNKNOWN; // block 2's last frame
        assert_eq!(eligible_contexts(&valid, &targets), [0]);
        assert!(
            eligible_contexts(&valid[..CONTEXT_FRAMES - 1], &targets[..CONTEXT_FRAMES - 1])
                .is_empty()
        );
    }
}
