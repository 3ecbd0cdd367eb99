use super::*;
use crate::render::folded::tests::with_nested_spans;
use protocol::SpanSummary;

const IMG: &str = "<img src=x onerror=alert(1)>";
const SCRIPT_OUT: &str = "</script><script>document.title='pwned'</script>";
const STYLE_OUT: &str = "</style><b>x</b>";

fn page_of(r: &Report) -> String {
    let files = crate::render::derived(r).unwrap();
    let last = files.last().unwrap();
    assert_eq!(last.path, HTML);
    String::from_utf8(last.bytes.clone()).unwrap()
}

/// The nested-spans report with its stage and spans renamed to hostile strings.
fn hostile() -> Report {
    let mut r = with_nested_spans();
    let rename = |n: &str| match n {
        "a" => IMG.to_string(),
        "c" => SCRIPT_OUT.to_string(),
        "noop" => STYLE_OUT.to_string(),
        other => other.to_string(),
    };
    for w in &mut r.workers {
        for j in &mut w.jobs {
            j.stage = rename(&j.stage);
            for s in &mut j.slices {
                s.name = rename(&s.name);
            }
        }
    }
    let mut st = r.stages.remove("noop").unwrap();
    st.spans = std::mem::take(&mut st.spans).into_iter().map(|(k, v)| (rename(&k), v)).collect();
    r.stages.insert(rename("noop"), st);
    if let crate::modes::Section::Trials(t) = &mut r.section {
        let set = t.trials.remove("noop").unwrap();
        t.trials.insert(rename("noop"), set);
    }
    r
}

#[test]
fn the_same_report_gives_the_same_page() {
    let r = with_nested_spans();
    let page = page_of(&r);
    assert_eq!(page, page_of(&r));
    assert!(page.starts_with("<!DOCTYPE html>"));
    // One script, the page's own; nothing fetched.
    assert_eq!(page.matches("<script").count(), 1);
    for attr in ["src=", "href="] {
        assert!(!page.contains(attr), "{attr} in the page");
    }
}

#[test]
fn names_from_a_program_are_text_never_markup() {
    let page = page_of(&hostile());
    for raw in [IMG, SCRIPT_OUT, STYLE_OUT, "<b>x</b>", "<img"] {
        assert!(!page.contains(raw), "{raw} reached the page unescaped");
    }
    assert_eq!(page.matches("<script").count(), 1);
    assert_eq!(page.matches("</style>").count(), 1);
    // The names are there, as text.
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(page.contains("&lt;/script&gt;&lt;script&gt;"));
}

#[test]
fn the_page_holds_the_reports_figures() {
    let r = with_nested_spans();
    let page = page_of(&r);
    // The stage's wall as the stage table formats it, and each span's self
    // time per trial as the spans table does.
    let st = &r.stages["noop"];
    assert!(page.contains(&format!(">{}</td>", duration(st.wall_s))));
    for row in crate::render::span_rows(&r) {
        assert!(page.contains(&format!("data-span=\"{}\"", row.span)), "{}", row.span);
        assert!(page.contains(&format!(">{}</td>", row.cells[8])), "{}", row.cells[8]);
    }
    // The flame graph's frames: b's time per trial, 1 s inclusive (800 ms its own).
    assert!(page.contains("<title>b (1,000,000 µs per trial"), "no frame for b");
    assert!(page.contains("every span call"), "the note says the graph is whole");
}

/// A trials run of 30 spans over three trials, each span's calls spread
/// over six powers of two: the page's budget is 300 KB.
#[test]
fn a_page_of_thirty_spans_is_within_its_budget() {
    let mut r = with_nested_spans();
    let mut summaries = Vec::new();
    for job in r.workers.iter_mut().take(3).flat_map(|w| &mut w.jobs) {
        job.slices.clear();
        let mut these = Vec::new();
        for i in 0..30 {
            let name = format!("module.Class.method_{i:02}");
            let mut s = SpanSummary::new(&name);
            for k in 0..200 {
                let d = 1e-5 * 2f64.powf((k % 60) as f64 / 10.0);
                s.add_call(d, 0.0);
                if k < 20 {
                    let at = job.start_s + (i as f64) * 0.05 + k as f64 * 0.002;
                    job.slices.push(crate::rundir::report::TimedSlice {
                        name: name.clone(),
                        start_s: at,
                        end_s: at + d.min(0.0015),
                        beside: false,
                    });
                }
            }
            these.push(s);
        }
        summaries.push((job.end_s - job.start_s, these));
    }
    let (spans, totals) =
        crate::rundir::spans::records(summaries.iter().map(|(w, s)| (*w, &s[..]))).unwrap();
    let st = r.stages.get_mut("noop").unwrap();
    st.spans = spans;
    st.span_totals = Some(totals);
    let page = page_of(&r);
    assert_eq!(page.matches("<figure class=\"histogram\"").count(), 30);
    assert!(page.len() <= 300 * 1024, "report.html is {} bytes", page.len());
}
