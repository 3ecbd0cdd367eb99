//! Two runs' sampled stacks (`--sample`) compared: per stage sampled in
//! both, the functions whose share of the running samples changed, by the
//! rank test over the trials' shares, as one sentence.

use crate::rundir::samples::{FunctionShare, SampledRecord, Share};
use crate::stats;

/// How many changed functions a sentence names (the largest changes).
const NAMED: usize = 5;

/// A sentence per stage both runs sampled.
pub(crate) fn notes(
    a: &crate::modes::Report,
    b: &crate::modes::Report,
    common: &[String],
) -> Vec<String> {
    common
        .iter()
        .filter_map(|k| {
            let (x, y) = (a.stages.get(k)?.samples.as_ref()?, b.stages.get(k)?.samples.as_ref()?);
            Some(format!("`{k}` sampled stacks: {}", changed(x, y)))
        })
        .collect()
}

/// A share below this in both runs is never named (imports, the helper).
const FLOOR: f64 = 0.01;
/// Nor is a change smaller than this (a share's points, as a fraction).
const SMALLEST: f64 = 0.01;

/// What changed from `a` to `b`: of the functions listed in both, those at
/// [`FLOOR`] or more in either run are tested, each on one share chosen
/// before the test (its self share where that reaches [`FLOOR`], else its
/// inclusive share); a function is named when the rank test over the
/// trials is significant with Holm's correction over the functions tested
/// (so a like run names none with chance at most ALPHA, however many are
/// tested), the two intervals are apart and the share moved by
/// [`SMALLEST`] or more; the largest changes of time a trial first. Or that
/// none did, or that the trials are too few for the test to say so. Shares
/// are of all the running samples: less time in one function is more share
/// for every other, so a change names its partners too.
pub(crate) fn changed(a: &SampledRecord, b: &SampledRecord) -> String {
    judged(a, b).sentence
}

/// What [`changed`] says, with the functions it names.
pub(crate) struct Judged {
    pub(crate) sentence: String,
    /// Every function found changed, (lane, function), named or not.
    pub(crate) functions: Vec<(String, String)>,
}

/// [`changed`]'s judgement.
pub(crate) fn judged(a: &SampledRecord, b: &SampledRecord) -> Judged {
    let trials = |x: &SampledRecord| x.functions.first().map_or(0, |f| f.own.trials.len());
    let (na, nb) = (trials(a), trials(b));
    // A preparation phase's samples are its programs, one per worker.
    let per = a.per();
    let find = |f: &FunctionShare| {
        b.functions.iter().find(|g| g.lane == f.lane && g.function == f.function)
    };
    let reaches = |x: &Share, y: &Share| x.median.max(y.median) >= FLOOR;
    let mut both = 0;
    // Per function tested: (a's, b's, which share, the rank test's p).
    let mut tested = Vec::new();
    for f in &a.functions {
        let Some(g) = find(f) else { continue };
        both += 1;
        let (which, x, y) = if reaches(&f.own, &g.own) {
            ("self", &f.own, &g.own)
        } else if reaches(&f.inclusive, &g.inclusive) {
            ("inclusive", &f.inclusive, &g.inclusive)
        } else {
            continue;
        };
        tested.push((f, g, which, x, y, stats::mann_whitney_p(&x.trials, &y.trials)));
    }
    let m = tested.len().max(1);
    if stats::smallest_p(na, nb) >= stats::ALPHA / m as f64 {
        let sentence = format!(
            "too few {per}s to tell whether a function's share changed ({na} and {nb}; the rank test over {m} function(s) at {}% or more cannot reach Holm's p < {} / {m})",
            FLOOR * 100.0,
            stats::ALPHA
        );
        return Judged { sentence, functions: Vec::new() };
    }
    let ps: Vec<f64> = tested.iter().map(|t| t.5).collect();
    let significant = stats::holm(&ps, stats::ALPHA);
    let mut found: Vec<(f64, String)> = Vec::new();
    let mut functions = Vec::new();
    for ((f, g, which, x, y, p), significant) in tested.into_iter().zip(significant) {
        let apart = x.high < y.low || y.high < x.low;
        if !(significant && apart && (y.median - x.median).abs() >= SMALLEST) {
            continue;
        }
        let pct = |s: &Share| format!("{:.1}%", s.median * 100.0);
        // A share is of all the running samples, so less time in one
        // function raises every other's share: a function is ranked by the
        // time a trial spent in it, share times the running samples, so
        // the one that changed leads and its partners follow.
        let rate = f64::from(a.rate_hz.max(1));
        let seconds = (y.median * b.samples - x.median * a.samples) / rate;
        let sign = if seconds < 0.0 { "-" } else { "+" };
        // Ranked by the change of its own (self) time a trial: a caller's
        // inclusive time moves with every callee's, which is named itself.
        let own = (g.own.median * b.samples - f.own.median * a.samples) / rate;
        functions.push((f.lane.clone(), f.function.clone()));
        found.push((
            own.abs(),
            format!(
                "`{}` ({}) {which} {} → {}, {sign}{} a {per} (p {})",
                f.function,
                f.lane,
                pct(x),
                pct(y),
                crate::fmt::duration(seconds.abs()),
                crate::fmt::p_value(p)
            ),
        ));
    }
    let test = format!(
        "Mann–Whitney over {na} and {nb} {per}s, Holm's p < {} over the {m} at {}% or more",
        stats::ALPHA,
        FLOOR * 100.0
    );
    if found.is_empty() {
        let sentence = format!(
            "no function's share changed significantly ({both} function(s) listed in both; {test})"
        );
        return Judged { sentence, functions };
    }
    found.sort_by(|x, y| y.0.total_cmp(&x.0));
    let n = found.len();
    let named: Vec<String> = found.into_iter().take(NAMED).map(|(_, s)| s).collect();
    let sentence = format!(
        "{n} function(s)' share of the running samples changed ({test}; of {both} listed in both): {}",
        named.join("; ")
    );
    Judged { sentence, functions }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::samples::{parse, record};

    fn run(f: u64, g: u64, trials: usize) -> SampledRecord {
        run3(f, g, 0, trials)
    }

    /// f, g and (where not 0) h's samples a trial.
    fn run3(f: u64, g: u64, h: u64, trials: usize) -> SampledRecord {
        // A little spread per trial, so the rank test sees distinct values.
        let stacks: Vec<_> = (0..trials as u64)
            .map(|t| {
                let mut text =
                    format!("main;m (t.py);f (t.py) {}\nmain;m (t.py);g (t.py) {}\n", f + t, g + t);
                if h > 0 {
                    text.push_str(&format!("main;m (t.py);h (t.py) {}\n", h + t));
                }
                parse(&text).unwrap()
            })
            .collect();
        record("py-spy 0.4.3", 100, &stacks, &[], 3).unwrap()
    }

    #[test]
    fn a_shift_from_f_to_g_is_named_and_the_same_split_is_not() {
        let said = changed(&run(70, 30, 6), &run(50, 50, 6));
        assert!(said.starts_with("2 function(s)' share of the running samples changed"), "{said}");
        assert!(said.contains("`f (t.py)` (main) self 69.0% → 50.0%, -"), "{said}");
        assert!(said.contains(" a trial (p 0.0028)"), "{said}");
        // f made 3.5× faster, g unchanged, h a little faster: g's share
        // grows more than f's shrinks (29% → 59%, 67% → 39%), but f changed
        // the time a trial spends, and is named first.
        let said = changed(&run3(670, 290, 40, 6), &run3(190, 290, 10, 6));
        let first = said.split(": `").nth(1).unwrap_or_default();
        assert!(first.starts_with("f (t.py)"), "{said}");
        let same = changed(&run(70, 30, 6), &run(70, 30, 6));
        assert!(same.starts_with("no function's share changed significantly"), "{same}");
        let few = changed(&run(70, 30, 3), &run(50, 50, 3));
        assert!(few.starts_with("too few trials to tell"), "{few}");
        // Four a side could name one function alone (p 0.030), never one
        // of the four tested here.
        let few = changed(&run(70, 30, 4), &run(50, 50, 4));
        assert!(few.starts_with("too few trials to tell"), "{few}");
    }

    /// Like runs in which the start-up outside `m` (the interpreter's
    /// imports, on a busier machine) grew a little: `m`'s inclusive share
    /// falls by two points with p < 0.05 alone, but not below 0.05 / 4, the four
    /// functions tested. The test can say no: the uncorrected p is shown
    /// to be below ALPHA, and a larger shift is still named.
    #[test]
    fn a_like_run_with_a_slower_start_names_nothing_once_the_family_is_counted() {
        let like = |start: &[u64]| {
            let stacks: Vec<_> = start
                .iter()
                .enumerate()
                .map(|(t, s)| {
                    let t = t as u64;
                    let text = format!(
                        "main;s (t.py) {s}\nmain;m (t.py);f (t.py) {}\nmain;m (t.py);g (t.py) {}\n",
                        700 + 3 * t,
                        300 + 2 * t
                    );
                    parse(&text).unwrap()
                })
                .collect::<Vec<_>>();
            record("py-spy 0.4.3", 100, &stacks, &[], 3).unwrap()
        };
        let (a, b) = (like(&[30, 31, 32, 33, 34, 57]), like(&[50, 52, 54, 56, 58, 60]));
        let m = |r: &SampledRecord| {
            r.functions.iter().find(|f| f.function == "m (t.py)").unwrap().inclusive.clone()
        };
        let (x, y) = (m(&a), m(&b));
        // Alone, m would be named: p < 0.05, intervals apart, a point moved.
        let p = stats::mann_whitney_p(&x.trials, &y.trials);
        assert!((stats::ALPHA / 4.0..stats::ALPHA).contains(&p), "{p}");
        assert!(x.low > y.high && x.median - y.median >= SMALLEST, "{x:?} {y:?}");
        let said = changed(&a, &b);
        assert!(said.starts_with("no function's share changed significantly"), "{said}");
        assert!(said.contains("over the 4 at 1% or more"), "{said}");
        let moved = changed(&a, &like(&[120, 135, 126, 144, 123, 138]));
        assert!(moved.contains("`s (t.py)` (main) self"), "{moved}");
    }
}
