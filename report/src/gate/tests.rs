use super::*;
use crate::rundir::gate::SampledChange;

/// Couples of `n` pairs each, head = base × `ratio`, each at a per-couple
/// level the machine set (both sides alike: ×1, ×2, ×3) and each trial with
/// a small wobble of its own (up to ± `wobble`, on either side).
fn couples_of(couples: usize, n: usize, ratio: f64, wobble: f64) -> Vec<Vec<(f64, f64)>> {
    let w = |i: usize, c: usize, salt: usize| {
        1.0 + wobble * (((i * 7 + c * 13 + salt * 5) % 11) as f64 / 5.0 - 1.0)
    };
    (0..couples)
        .map(|c| {
            let level = 1.0 + (c % 3) as f64;
            (0..n).map(|i| (level * w(i, c, 0), level * ratio * w(i, c, 1))).collect()
        })
        .collect()
}

fn j(c: &[Vec<(f64, f64)>]) -> Judged {
    judge("s", "wall_s", c, Unit::Couple, 0.95, 5.0).unwrap()
}

#[test]
fn each_of_the_four_verdicts_is_reached_and_each_can_say_no() {
    // 10% slower in every couple beside a neighbour that triples both: regressed.
    let r = j(&couples_of(8, 3, 1.10, 0.01));
    assert_eq!(r.verdict, Verdict::Regressed, "{r:?}");
    assert!((r.ratio - 1.10).abs() < 0.01 && (r.pairs, r.couples) == (24, 8), "{r:?}");
    // 10% faster: improved, never regressed.
    assert_eq!(j(&couples_of(8, 3, 0.90, 0.01)).verdict, Verdict::Improved);
    // The same, to within 1%: same.
    let same = j(&couples_of(8, 3, 1.0, 0.01));
    assert_eq!(same.verdict, Verdict::Same, "{same:?}");
    // 3% slower, tight: significant, but its interval inside ±5%: same.
    assert_eq!(j(&couples_of(8, 3, 1.03, 0.005)).verdict, Verdict::Same);
    // Couples that wobble by 8%: the interval reaches past ±5%: not sure, and why.
    let wide = j(&couples_of(8, 1, 1.0, 0.08));
    assert_eq!(wide.verdict, Verdict::NotSure, "{wide:?}");
    assert!(wide.reason.as_deref().unwrap().contains("reaches past ±5%"), "{wide:?}");
    // Too few couples, however many pairs each holds.
    let few = j(&couples_of(1, 12, 1.10, 0.01));
    assert_eq!(few.verdict, Verdict::NotSure);
    assert_eq!(few.reason.as_deref(), Some("1 couple(s) of runs: too few to judge"));
    // Enough couples for 95%, too few for 99.5%: not sure, and why.
    let short = judge("s", "f", &couples_of(8, 3, 1.10, 0.01), Unit::Couple, 0.995, 5.0).unwrap();
    assert_eq!(short.verdict, Verdict::NotSure, "{short:?}");
    assert!(short.reason.as_deref().unwrap().contains("too few for the corrected level"));
}

#[test]
fn a_couple_is_its_runs_lowest_trials_and_counts_once_however_many_pairs_it_holds() {
    // Each run's least-disturbed trial: 1.1 / 1.0.
    let c = vec![(1.5, 1.1), (1.0, 2.0), (1.4, 1.6)];
    assert!((couple_ratio(&c).unwrap() - 1.1f64.ln()).abs() < 1e-12);
    assert_eq!(couple_ratio(&[(0.0, 1.0)]), None);
    // Four couples, each ×1.10 in all three of its pairs (one event of
    // the machine's, or of the code's, seen three times): counted pair by
    // pair, twelve agreeing pairs decide at 99.5%; counted by couple, four
    // units cannot.
    let c = couples_of(4, 3, 1.10, 0.002);
    let by_pair = judge("s", "f", &c, Unit::Pair, 0.995, 5.0).unwrap();
    assert_eq!(by_pair.verdict, Verdict::Regressed, "{by_pair:?}");
    let by_couple = judge("s", "f", &c, Unit::Couple, 0.995, 5.0).unwrap();
    assert_eq!(by_couple.verdict, Verdict::NotSure, "{by_couple:?}");
    assert_eq!(by_couple.reason.as_deref(), Some("4 couple(s) of runs: too few to judge"));
    // Nine such couples do.
    let nine = judge("s", "f", &couples_of(9, 3, 1.10, 0.002), Unit::Couple, 0.995, 5.0).unwrap();
    assert_eq!(nine.verdict, Verdict::Regressed, "{nine:?}");
}

#[test]
fn couples_whose_own_ratio_the_machine_moved_are_not_sure() {
    // Couples alternately ×1.3 and ×0.8: the machine, not the code.
    let c: Vec<Vec<(f64, f64)>> =
        (0..8).map(|k| vec![(1.0, if k % 2 == 0 { 1.3 } else { 0.8 }); 3]).collect();
    let j = j(&c);
    assert_eq!(j.verdict, Verdict::NotSure, "{j:?}");
    assert!(j.reason.as_deref().unwrap().contains("moved the couples' own ratio"), "{j:?}");
}

#[test]
fn the_gate_says_regressed_if_any_figure_did_then_not_sure_then_improved() {
    let with = |vs: &[Verdict]| -> Vec<Judged> {
        vs.iter()
            .map(|v| {
                let mut j =
                    judge("s", "f", &couples_of(8, 3, 1.0, 0.01), Unit::Couple, 0.95, 5.0).unwrap();
                j.verdict = *v;
                j
            })
            .collect()
    };
    use Verdict::*;
    assert_eq!(overall(&with(&[Same, Regressed, NotSure])), Regressed);
    assert_eq!(overall(&with(&[Same, Improved, NotSure])), NotSure);
    assert_eq!(overall(&with(&[Same, Improved])), Improved);
    assert_eq!(overall(&with(&[Same, Same])), Same);
    assert_eq!(overall(&[]), NotSure);
}

#[test]
fn windows_alternate_which_side_runs_first_and_the_level_is_corrected() {
    assert_eq!(order(0), [Side::Base, Side::Head, Side::Head, Side::Base]);
    assert_eq!(order(1), [Side::Head, Side::Base, Side::Base, Side::Head]);
    assert!((confidence(1, 1) - 0.95).abs() < 1e-12);
    assert!((confidence(10, 1) - 0.995).abs() < 1e-12);
    assert!((confidence(2, 5) - 0.995).abs() < 1e-12);
}

/// bisect's probe judged in pairs: like good is good, like bad is bad,
/// halfway or beside endpoints that do not differ is neither, and too few
/// pairs or couples the machine moved say nothing.
#[test]
fn a_probe_in_pairs_is_good_bad_or_not_yet_either() {
    use crate::rundir::bisect::ProbeVerdict::{Bad, Good};
    let c = |gp: &[Vec<(f64, f64)>], pb: &[Vec<(f64, f64)>]| bisection::classify(gp, pb, 5.0);
    let (like, worse) = (couples_of(4, 3, 1.0, 0.01), couples_of(4, 3, 1.4, 0.01));
    assert_eq!(c(&like, &worse).verdict, Some(Good));
    assert_eq!(c(&worse, &like).verdict, Some(Bad));
    let half = couples_of(4, 3, 1.18, 0.01);
    assert_eq!(c(&half, &half).verdict, None, "halfway is neither");
    assert_eq!(c(&like, &like).verdict, None, "endpoints alike: neither");
    assert_eq!(c(&worse[..1], &like[..1]).verdict, None, "3 pairs say nothing");
    // Regressed at 95% but not at the bisection's 99%: six pairs, all
    // slower, give p = 2/64 at best.
    let six = couples_of(2, 3, 1.10, 0.01);
    assert_eq!(judge("s", "f", &six, Unit::Pair, 0.95, 5.0).unwrap().verdict, Verdict::Regressed);
    assert_eq!(c(&six, &couples_of(2, 3, 1.0, 0.01)).verdict, None);
    // Bad against good, but the probe's couples with bad disagree wildly
    // (×1.4 in one, ×0.7 in the next): the machine moved them, neither.
    let moved: Vec<Vec<(f64, f64)>> =
        (0..6).map(|k| vec![(1.0, if k % 2 == 0 { 1.4 } else { 0.7 }); 3]).collect();
    assert_eq!(c(&couples_of(6, 3, 1.4, 0.01), &moved).verdict, None);
}

/// The boundary side by side holds only for an upper commit surely slower.
#[test]
fn the_boundary_in_pairs_holds_only_when_the_upper_commit_is_surely_slower() {
    assert!(bisection::boundary_holds(&couples_of(4, 3, 1.4, 0.01), 5.0).0);
    assert!(!bisection::boundary_holds(&couples_of(4, 3, 1.0, 0.01), 5.0).0);
    assert!(!bisection::boundary_holds(&couples_of(4, 3, 0.7, 0.01), 5.0).0, "faster is none");
    assert!(!bisection::boundary_holds(&[], 5.0).0);
}

/// A run of three trials: `wall` each (a little apart), and, unless
/// `f` is 0, sampled stacks with `f` samples in `f` and 30 in `g` a trial
/// (`spread` more a trial, so the runs' shares differ a little).
fn sampled_run(wall: f64, f: u64, spread: u64) -> Run {
    use crate::rundir::samples::{parse, record};
    let stacks: Vec<_> = (0..3)
        .map(|t| {
            let (f, g) = (f + spread * t, 30 + t);
            parse(&format!("main;m (t.py);f (t.py) {f}\nmain;m (t.py);g (t.py) {g}\n")).unwrap()
        })
        .collect();
    let trials = vec![wall, wall * 1.01, wall * 1.02];
    let figures = std::collections::BTreeMap::from([("wall_s".to_string(), trials)]);
    Run {
        planned: vec![("command".into(), "d".into())],
        measured: Default::default(),
        repeated: std::collections::BTreeMap::from([("command".to_string(), figures)]),
        rounds: false,
        spans: Vec::new(),
        sampled: match f {
            0 => Default::default(),
            _ => std::collections::BTreeMap::from([(
                "command".to_string(),
                record("py-spy 0.4.3", 100, &stacks, &[], 3).unwrap(),
            )]),
        },
    }
}

/// Eight couples: base's runs with `f` 70, head's with `head_f` and
/// `head_wall`; the gate's sampled attribution of what it found.
fn attributed(head_wall: f64, head_f: u64, unsampled_head: bool) -> Vec<SampledChange> {
    let mut made = Vec::new();
    for k in 0..8u64 {
        made.push((Side::Base, sampled_run(1.0, 70, 1 + k % 3)));
        let f = if unsampled_head && k == 5 { 0 } else { head_f };
        made.push((Side::Head, sampled_run(head_wall, f, 1 + (k + 1) % 3)));
    }
    let runs: Vec<(Side, &Run)> = made.iter().map(|(s, r)| (*s, r)).collect();
    found(&runs, &["wall_s".into()], 5.0, 1).unwrap().sampled
}

/// With `--sample`, a regressed stage names the function that took more
/// of the samples, and says so of none when the split stayed; nothing
/// where the stage did not regress or a run of one side was not sampled.
#[test]
fn a_regressed_stage_sampled_on_both_sides_names_the_function_that_moved() {
    let slower_f = attributed(1.3, 91, false);
    assert_eq!(slower_f.len(), 1, "{slower_f:?}");
    assert_eq!(slower_f[0].stage, "command");
    let said = &slower_f[0].sentence;
    assert!(said.contains("share of the running samples changed"), "{said}");
    let first = said.split(": `").nth(1).unwrap_or_default();
    assert!(first.starts_with("f (t.py)` (main) self 7"), "{said}");
    assert!(said.contains("over 24 and 24 trials"), "pooled over the runs: {said}");
    let same_split = attributed(1.3, 70, false);
    assert!(same_split[0].sentence.starts_with("no function's share changed"), "{same_split:?}");
    assert!(attributed(1.0, 91, false).is_empty(), "not regressed");
    assert!(attributed(1.3, 91, true).is_empty(), "a head run unsampled");
}

/// A run whose stage `command` has nested spans `load` (20 ms a trial)
/// and `work` (`work_s`), three trials a little apart.
fn spans_run(work_s: f64) -> Run {
    let mut run = sampled_run(0.07, 0, 1);
    let stack = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let trials = |x: f64| vec![x, x * 1.01, x * 1.02];
    run.spans.push(crate::render::folded::Stacks {
        stage: "command".into(),
        frames: Default::default(),
        samples: std::collections::BTreeMap::from([
            (stack(&["command", "load"]), trials(0.02)),
            (stack(&["command", "work"]), trials(work_s)),
        ]),
        nested: true,
        measurements: 3,
        calls_drawn: 6,
        calls: 6,
    });
    run
}

/// The page's stacks: a span 30% slower coloured slower and its
/// unchanged sibling not, each side's trials pooled; sampled stacks
/// coloured only where the function on top moved; nothing of a stage
/// some run did not draw.
#[test]
fn the_stacks_head_against_base_colour_only_what_a_test_found_changed() {
    use crate::rundir::gate::{StackChange, StacksOf};
    let made: Vec<(Side, Run)> = (0..4)
        .flat_map(|_| [(Side::Base, spans_run(0.05)), (Side::Head, spans_run(0.065))])
        .collect();
    let runs: Vec<(Side, &Run)> = made.iter().map(|(s, r)| (*s, r)).collect();
    let got = stacks::compared(&runs, 5.0);
    assert_eq!(got.len(), 1, "{got:?}");
    let spans = &got[0];
    assert_eq!((spans.of, spans.base_trials, spans.head_trials), (StacksOf::Spans, 12, 12));
    let of = |name: &str| spans.stacks.iter().find(|d| d.frames.last().unwrap() == name).unwrap();
    assert_eq!(of("work").change, Some(StackChange::Slower), "{spans:?}");
    assert_eq!((of("work").base_us, of("work").head_us), (50_500, 65_650));
    assert_eq!(of("load").change, None, "{spans:?}");
    // Alike: nothing coloured.
    let like: Vec<(Side, Run)> = (0..4)
        .flat_map(|_| [(Side::Base, spans_run(0.05)), (Side::Head, spans_run(0.05))])
        .collect();
    let runs: Vec<(Side, &Run)> = like.iter().map(|(s, r)| (*s, r)).collect();
    assert!(stacks::compared(&runs, 5.0)[0].stacks.iter().all(|d| d.change.is_none()));
    // A head run without the stage's spans: no spans compared.
    let mut partial = made;
    partial[1].1.spans.clear();
    let runs: Vec<(Side, &Run)> = partial.iter().map(|(s, r)| (*s, r)).collect();
    assert!(stacks::compared(&runs, 5.0).is_empty());
    // Sampled: f (70 → 91 a trial) coloured slower, g (30) not.
    let mut made = Vec::new();
    for k in 0..8u64 {
        made.push((Side::Base, sampled_run(1.0, 70, 1 + k % 3)));
        made.push((Side::Head, sampled_run(1.3, 91, 1 + (k + 1) % 3)));
    }
    let runs: Vec<(Side, &Run)> = made.iter().map(|(s, r)| (*s, r)).collect();
    let got = stacks::compared(&runs, 5.0);
    let sampled = got.iter().find(|s| s.of == StacksOf::Sampled).unwrap();
    let top = |name: &str| {
        sampled.stacks.iter().find(|d| d.frames.last().unwrap() == name).unwrap().change
    };
    assert_eq!(top("f (t.py)"), Some(StackChange::Slower), "{sampled:?}");
    assert_eq!(top("g (t.py)"), None, "{sampled:?}");
}
