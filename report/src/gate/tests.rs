use super::*;

/// Couples of `n` pairs each, head = base × `ratio` × a per-couple level
/// the machine set (both sides alike) and a small per-pair wobble.
fn couples_of(couples: usize, n: usize, ratio: f64, wobble: f64) -> Vec<Vec<(f64, f64)>> {
    (0..couples)
        .map(|c| {
            let level = 1.0 + (c % 3) as f64; // a neighbour: ×1, ×2, ×3
            (0..n)
                .map(|i| {
                    let w = 1.0 + wobble * (((i * 7 + c * 3) % 5) as f64 - 2.0) / 2.0;
                    (level, level * ratio * w)
                })
                .collect()
        })
        .collect()
}

#[test]
fn each_of_the_four_verdicts_is_reached_and_each_can_say_no() {
    let j = |c: &[Vec<(f64, f64)>]| judge("s", "wall_s", c, 0.95, 5.0).unwrap();
    // 10% slower in every pair beside a neighbour that triples both: regressed.
    let r = j(&couples_of(4, 4, 1.10, 0.01));
    assert_eq!(r.verdict, Verdict::Regressed, "{r:?}");
    assert!((r.ratio - 1.10).abs() < 0.01 && r.pairs == 16, "{r:?}");
    // 10% faster: improved, never regressed.
    assert_eq!(j(&couples_of(4, 4, 0.90, 0.01)).verdict, Verdict::Improved);
    // The same, to within 1%: same.
    let same = j(&couples_of(4, 4, 1.0, 0.01));
    assert_eq!(same.verdict, Verdict::Same, "{same:?}");
    // 3% slower, tight: significant but inside the threshold: not regressed
    // and not the same either when the interval reaches past it? Here it
    // is inside ±5%: same.
    assert_eq!(j(&couples_of(4, 4, 1.03, 0.005)).verdict, Verdict::Same);
    // A wide wobble: the interval reaches past ±5%: not sure, and why.
    let wide = j(&couples_of(4, 4, 1.0, 0.3));
    assert_eq!(wide.verdict, Verdict::NotSure, "{wide:?}");
    assert!(wide.reason.as_deref().unwrap().contains("reaches past ±5%"), "{wide:?}");
    // Too few pairs.
    let few = j(&couples_of(1, 4, 1.10, 0.01));
    assert_eq!(few.verdict, Verdict::NotSure);
    assert_eq!(few.reason.as_deref(), Some("4 pair(s): too few to judge"));
}

#[test]
fn pairs_whose_own_ratio_the_machine_moved_are_not_sure() {
    // Couples alternately ×1.3 and ×0.8 slower: the machine, not the code.
    let mut c = couples_of(2, 4, 1.3, 0.0);
    c.extend(couples_of(2, 4, 0.8, 0.0));
    c.swap(1, 2);
    let j = judge("s", "wall_s", &c, 0.95, 5.0).unwrap();
    assert_eq!(j.verdict, Verdict::NotSure, "{j:?}");
    assert!(j.reason.as_deref().unwrap().contains("moved the pairs' own ratio"), "{j:?}");
}

#[test]
fn the_gate_says_regressed_if_any_figure_did_then_not_sure_then_improved() {
    let with = |vs: &[Verdict]| -> Vec<Judged> {
        vs.iter()
            .map(|v| {
                let mut j = judge("s", "f", &couples_of(4, 4, 1.0, 0.01), 0.95, 5.0).unwrap();
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
    assert_eq!(judge("s", "f", &six, 0.95, 5.0).unwrap().verdict, Verdict::Regressed);
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
