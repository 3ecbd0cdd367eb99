use super::*;
use crate::rundir::report::{JobSlice, TimedSlice};
use protocol::SpanSummary;

pub(crate) fn trials_fixture() -> Report {
    serde_json::from_str(include_str!("../fixtures/trials-report.json")).unwrap()
}

fn slice(name: &str, start_s: f64, end_s: f64) -> TimedSlice {
    TimedSlice { name: name.into(), start_s, end_s, beside: false }
}

/// One trial's slices, `at` seconds into the run: `run` holds `a` and `b`,
/// `b` holds `c`, `t` overlaps `a` and `b` without nesting (a thread), and
/// `bg`, from another thread, lies wholly inside `a` but is not its child.
fn trial(at: f64, stretch: f64) -> JobSlice {
    let s = |name, b: f64, e: f64| slice(name, at + b * stretch, at + e * stretch);
    JobSlice {
        stage: "noop".into(),
        start_s: at,
        end_s: at + 2.5 * stretch,
        slices: vec![
            s("run", 0.0, 2.0),
            s("a", 0.1, 0.6),
            s("t", 0.5, 1.5),
            s("b", 0.7, 1.7),
            s("c", 1.0, 1.2),
            TimedSlice { beside: true, ..s("bg", 0.2, 0.4) },
        ],
    }
}

/// The trials fixture with `noop` given two counted trials and, first, a
/// warm-up three times as long, which the stacks must leave out.
pub(crate) fn with_nested_spans() -> Report {
    let mut r = trials_fixture();
    let jobs = [trial(0.0, 3.0), trial(10.0, 1.0), trial(20.0, 1.0)];
    let mut summaries = Vec::new();
    for (w, job) in r.workers.iter_mut().zip(jobs) {
        w.jobs = vec![job];
    }
    for job in r.workers.iter().skip(1).take(2).flat_map(|w| &w.jobs) {
        let mut these: Vec<SpanSummary> = Vec::new();
        for s in &job.slices {
            let mut one = SpanSummary::new(&s.name);
            one.add_call(s.end_s - s.start_s, s.start_s);
            these.push(one);
        }
        summaries.push((job.end_s - job.start_s, these));
    }
    let (spans, totals) =
        crate::rundir::spans::records(summaries.iter().map(|(w, s)| (*w, &s[..]))).unwrap();
    let st = r.stages.get_mut("noop").unwrap();
    st.spans = spans;
    st.span_totals = Some(totals);
    match &mut r.section {
        crate::modes::Section::Trials(t) => t.trials.get_mut("noop").unwrap().warmup = 1,
        _ => unreachable!("a trials fixture"),
    }
    r
}

#[test]
fn nested_slices_give_each_stack_its_self_time_per_counted_trial() {
    let r = with_nested_spans();
    let all = stacks(&r);
    assert_eq!(all.len(), 1);
    let s = &all[0];
    assert!(s.nested);
    assert_eq!(s.measurements, 2);
    assert!(s.complete(), "{} of {}", s.calls_drawn, s.calls);
    let mut lines = s.lines();
    lines.sort();
    assert_eq!(
        lines,
        [
            "noop 500000",
            "noop;[beside the main thread];bg 200000",
            "noop;[beside the main thread];t 1000000",
            "noop;run 500000",
            "noop;run;a 500000",
            "noop;run;b 800000",
            "noop;run;b;c 200000",
        ]
    );
    // The same lines, in the export's text.
    let text = text(&r);
    assert_eq!(text.lines().count(), 7);
    assert!(text.contains("noop;run;b;c 200000\n"), "{text}");
}

#[test]
fn a_stage_without_slices_is_drawn_flat_from_its_records() {
    let mut r = with_nested_spans();
    for w in &mut r.workers {
        w.jobs.clear();
    }
    let s = &stacks(&r)[0];
    assert!(!s.nested);
    let lines = s.lines();
    // run's self time is its own per trial: 2.0 - 0.5 - 1.0 s, as the records
    // pool it (the records know no nesting of these synthetic calls, so each is
    // its whole length here).
    assert!(lines.contains(&"noop;run 2000000".to_string()), "{lines:?}");
    assert!(!s.complete());
}

#[test]
fn frame_names_cannot_break_the_format() {
    assert_eq!(frame("a;b\nc\td"), "a_b_c d");
    assert_eq!(frame("<img src=x>"), "<img src=x>");
}
