//! The row contract every series must keep: `step` runs 0, 1, 2, … and the
//! UTC instant of each row is exactly 5 s after the previous one. Freezing
//! and extraction both check it with [`RowChecker`], so there is one
//! definition of a valid series.

use crate::clock;
use crate::contract::SAMPLE_SECONDS;

/// A broken row contract.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RowProblem {
    #[error("step {got} where {expected} was expected (steps must run 0, 1, 2, … without gaps)")]
    Step { expected: u64, got: u64 },
    #[error("timestamp '{0}' cannot be parsed (expected YYYY-MM-DDTHH:MM:SS±HHMM)")]
    Timestamp(String),
    #[error("timestamp '{text}' is {delta} s after the previous row in UTC (must be exactly 5 s)")]
    Cadence { text: String, delta: i64 },
    #[error("null {0}")]
    Null(&'static str),
}

/// Checks rows of one series in order.
#[derive(Default)]
pub struct RowChecker {
    next_step: u64,
    prev_utc: Option<i64>,
    /// The previous row's date and offset bytes, and the UTC instant of that
    /// local midnight: consecutive rows almost always share them, so only
    /// HH:MM:SS needs parsing (see [`clock::parse_same_day`]).
    day: Option<([u8; 10], [u8; 5], i64)>,
    /// The next row's timestamp as it must read if it is on the common path
    /// (5 s after the last accepted row, same date and offset), with its
    /// local seconds; `None` when the next row crosses midnight or the last
    /// one was not in the 24-byte form. A row equal to it byte for byte is
    /// one that [`clock::parse`] would accept at exactly that instant.
    next: Option<Expected>,
}

impl RowChecker {
    /// Checks one row; returns its local clock seconds of day.
    pub fn push(&mut self, step: u32, timestamp: &str) -> Result<u32, RowProblem> {
        if step as u64 != self.next_step {
            return Err(RowProblem::Step { expected: self.next_step, got: step as u64 });
        }
        let b = timestamp.as_bytes();
        let fast = match &self.day {
            Some((date, offset, midnight))
                if b.len() == 24 && b[..10] == date[..] && b[19..] == offset[..] =>
            {
                clock::parse_same_day(b, *midnight)
            }
            _ => None,
        };
        let stamp = match fast {
            Some(s) => s,
            None => {
                let s =
                    clock::parse(b).ok_or_else(|| RowProblem::Timestamp(timestamp.to_string()))?;
                if b.len() == 24 {
                    let midnight = s.utc - s.local_seconds as i64;
                    self.day =
                        Some((b[..10].try_into().unwrap(), b[19..].try_into().unwrap(), midnight));
                }
                s
            }
        };
        if let Some(prev) = self.prev_utc {
            if stamp.utc - prev != SAMPLE_SECONDS {
                return Err(RowProblem::Cadence {
                    text: timestamp.to_string(),
                    delta: stamp.utc - prev,
                });
            }
        }
        self.next_step += 1;
        self.prev_utc = Some(stamp.utc);
        self.next = b.try_into().ok().and_then(|t| Expected::after(t, stamp.local_seconds));
        Ok(stamp.local_seconds)
    }

    /// Checks a run of rows given as a string array's raw bytes and offsets
    /// (no nulls), appending each row's local seconds to `out`. A row on the
    /// common path (next step, and the bytes predicted from the row before)
    /// costs one 24-byte comparison; any other row goes through
    /// [`RowChecker::push`], so the rules and the errors are the same.
    /// On error, returns the index of the failing row with its problem.
    pub fn push_raw(
        &mut self,
        steps: &[u32],
        offsets: &[i32],
        data: &[u8],
        out: &mut Vec<u32>,
    ) -> Result<(), (usize, RowProblem)> {
        out.reserve(steps.len());
        let row = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
        let mut i = 0;
        while i < steps.len() {
            if let (Some(mut want), Some(mut prev)) = (self.next, self.prev_utc) {
                // The common path, with the state in registers.
                let mut step = self.next_step;
                let mut ahead = true;
                while ahead && i < steps.len() && steps[i] as u64 == step && want.is(row(i)) {
                    out.push(want.local);
                    (step, prev, i) = (step + 1, prev + SAMPLE_SECONDS, i + 1);
                    ahead = want.advance();
                }
                self.next_step = step;
                self.prev_utc = Some(prev);
                self.next = ahead.then_some(want);
                if i == steps.len() {
                    break;
                }
            }
            let text = std::str::from_utf8(row(i)).unwrap_or("<not UTF-8>");
            out.push(self.push(steps[i], text).map_err(|p| (i, p))?);
            i += 1;
        }
        Ok(())
    }
}

/// A 24-byte timestamp `YYYY-MM-DDTHH:MM:SS±HHMM` that a row must equal, with
/// its local seconds, held as two little-endian words (bytes 0..16 and
/// 16..24) so that comparing a row and stepping 5 s on stay in registers.
#[derive(Clone, Copy)]
struct Expected {
    head: u128,
    tail: u64,
    local: u32,
}

impl Expected {
    /// The timestamp 5 s after `t`, a valid one read as `local` seconds, or
    /// `None` where that crosses local midnight (the date changes).
    fn after(t: [u8; 24], local: u32) -> Option<Expected> {
        let mut e = Expected {
            head: u128::from_le_bytes(t[..16].try_into().unwrap()),
            tail: u64::from_le_bytes(t[16..].try_into().unwrap()),
            local,
        };
        e.advance().then_some(e)
    }

    #[inline]
    fn is(&self, b: &[u8]) -> bool {
        let Ok(b) = <&[u8; 24]>::try_from(b) else { return false };
        u128::from_le_bytes(b[..16].try_into().unwrap()) == self.head
            && u64::from_le_bytes(b[16..].try_into().unwrap()) == self.tail
    }

    /// Steps 5 s on by carrying through the HH:MM:SS digits: seconds in
    /// tail bytes 1 and 2, minutes in head bytes 14 and 15, hours in head
    /// bytes 11 and 12. Returns false at local midnight. The four digit
    /// steps are spelled out on purpose: a loop over a table of digits
    /// measured 3.5× slower in the `rows` example, and one carry helper on a
    /// widened tail 7% slower.
    #[inline]
    fn advance(&mut self) -> bool {
        const S10: u32 = 8;
        const S1: u32 = 16;
        const M10: u32 = 14 * 8;
        const M1: u32 = 15 * 8;
        const H10: u32 = 11 * 8;
        const H1: u32 = 12 * 8;
        self.local += SAMPLE_SECONDS as u32;
        if self.local >= 86_400 {
            return false;
        }
        if ((self.tail >> S1) as u8) < b'5' {
            self.tail += 5 << S1;
            return true;
        }
        self.tail -= 5 << S1;
        if ((self.tail >> S10) as u8) < b'5' {
            self.tail += 1 << S10;
            return true;
        }
        self.tail -= 5 << S10;
        if ((self.head >> M1) as u8) < b'9' {
            self.head += 1 << M1;
            return true;
        }
        self.head -= 9 << M1;
        if ((self.head >> M10) as u8) < b'5' {
            self.head += 1 << M10;
            return true;
        }
        self.head -= 5 << M10;
        let hour = self.local / 3600;
        let (tens, ones) = ((b'0' + (hour / 10) as u8) as u128, (b'0' + (hour % 10) as u8) as u128);
        self.head = self.head & !(0xffff << H10) | tens << H10 | ones << H1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw fast path and the per-row path accept the same rows and
    /// report the same first error, on clean and on damaged input.
    #[test]
    fn push_raw_agrees_with_push() {
        let mut rng = evidence::rng::Rng::new(11);
        for case in 0..300 {
            let n = rng.range(1, 400) as usize;
            let start = 1_541_300_000 + rng.range(0, 2000) as i64 * 5; // spans the 2018-11-04 DST change
            let mut steps: Vec<u32> = (0..n as u32).collect();
            let mut texts: Vec<String> = (0..n)
                .map(|i| {
                    let utc = start + 5 * i as i64;
                    let mut b = [0u8; 24];
                    clock::format_into(utc, clock::eastern_offset(utc), &mut b);
                    String::from_utf8(b.to_vec()).unwrap()
                })
                .collect();
            if case % 2 == 1 {
                let at = rng.range(0, n as u64) as usize;
                match rng.range(0, 4) {
                    0 => steps[at] = steps[at].wrapping_add(1),
                    1 => texts[at] = texts[at].replace(':', "-"),
                    2 => texts[at].replace_range(17..19, "07"),
                    _ => texts[at].replace_range(11..13, "25"),
                }
            }
            let mut offsets = vec![0i32];
            let mut data = Vec::new();
            for t in &texts {
                data.extend_from_slice(t.as_bytes());
                offsets.push(data.len() as i32);
            }
            let mut fast = RowChecker::default();
            let mut got = Vec::new();
            let fast_result = fast.push_raw(&steps, &offsets, &data, &mut got);
            let mut slow = RowChecker::default();
            let mut want = Vec::new();
            let mut slow_result = Ok(());
            for (i, (&st, t)) in steps.iter().zip(&texts).enumerate() {
                match slow.push(st, t) {
                    Ok(v) => want.push(v),
                    Err(p) => {
                        slow_result = Err((i, p));
                        break;
                    }
                }
            }
            assert_eq!(fast_result, slow_result, "case {case}");
            assert_eq!(got, want, "case {case}");
        }
    }

    /// Stepping the expected text 5 s at a time walks a whole local day
    /// exactly as the formatter writes it, from every phase of the 5 s grid
    /// and under both offset signs, and stops at midnight.
    #[test]
    fn the_expected_timestamp_steps_through_a_day_as_the_formatter_writes_it() {
        for offset in [-4 * 3600, 5 * 3600 + 30 * 60] {
            for phase in 0..5i64 {
                let midnight = 1_534_204_800 - offset; // 2018-08-14 00:00 local
                let text = |local: i64| {
                    let mut t = [0u8; 24];
                    clock::format_into(midnight + local, offset, &mut t);
                    t
                };
                let mut want = Expected::after(text(phase), phase as u32).unwrap();
                let mut steps = 1;
                for local in (phase + 5..86_400).step_by(5) {
                    assert!(want.is(&text(local)), "{}", String::from_utf8_lossy(&text(local)));
                    assert!(!want.is(&text(local + 5)));
                    assert_eq!(want.local, local as u32);
                    if local + 5 < 86_400 {
                        assert!(want.advance());
                    } else {
                        assert!(!want.advance(), "must stop at midnight");
                    }
                    steps += 1;
                }
                assert_eq!(steps, (86_400 - phase + 4) / 5);
            }
        }
    }

    #[test]
    fn row_checker_names_each_broken_rule() {
        let mut c = RowChecker::default();
        assert_eq!(c.push(0, "2018-08-14T15:30:00-0400"), Ok(55_800));
        assert_eq!(c.push(1, "2018-08-14T15:30:05-0400"), Ok(55_805));
        assert_eq!(
            c.push(3, "2018-08-14T15:30:10-0400"),
            Err(RowProblem::Step { expected: 2, got: 3 })
        );
        assert!(matches!(
            c.push(2, "2018-08-14T15:30:20-0400"),
            Err(RowProblem::Cadence { delta: 15, .. })
        ));
        assert!(matches!(c.push(2, "yesterday"), Err(RowProblem::Timestamp(_))));
        // A daylight-saving change: local clock jumps back an hour, UTC keeps 5 s.
        let mut c = RowChecker::default();
        c.push(0, "2018-11-04T01:59:55-0400").unwrap();
        assert_eq!(c.push(1, "2018-11-04T01:00:00-0500"), Ok(3600));
    }
}
