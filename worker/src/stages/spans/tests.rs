use super::*;

/// The figures of a whole file's text.
fn figures(text: &str) -> Result<Vec<Figure>, String> {
    let mut tally = Tally::default();
    tally.add(text, |_, _| {}).map_err(|e| e.to_string())?;
    Ok(tally.figures())
}

#[test]
fn spans_add_up_per_name_in_order_of_first_appearance() {
    let text = "{\"name\": \"load\", \"seconds\": 0.5}\n\n\
                {\"progress\": 0.5}\n\
                {\"name\": \"adapt_images\", \"seconds\": 54.7}\n\
                {\"name\": \"load\", \"seconds\": 0.25}\n";
    let f: Vec<(String, f64)> =
        figures(text).unwrap().into_iter().map(|f| (f.name, f.value)).collect();
    let names: Vec<&str> = f.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "span:load_s",
            "span:load_n",
            "span:load_median_s",
            "span:load_p95_s",
            "span:adapt_images_s",
            "span:adapt_images_n",
            "span:adapt_images_median_s",
            "span:adapt_images_p95_s",
        ]
    );
    assert_eq!((f[0].1, f[1].1, f[4].1, f[5].1), (0.75, 2.0, 54.7, 1.0));
    // Two calls, 0.5 and 0.25 s: the median is the lower, p95 the upper,
    // each within 1/128.
    assert!((f[2].1 - 0.25).abs() <= 0.25 / 128.0, "{f:?}");
    assert!((f[3].1 - 0.5).abs() <= 0.5 / 128.0, "{f:?}");
    assert_eq!(figures("").unwrap().len(), 0);
}

#[test]
fn a_bad_line_is_named_by_its_number() {
    let ok = "{\"name\": \"a\", \"seconds\": 1}\n";
    for (line, needle) in [
        ("not json", "not an object"),
        ("{\"name\": \"a\"}", "not an object"),
        ("{\"name\": \"a\", \"seconds\": 1, \"extra\": 2}", "unknown field"),
        ("{\"name\": \"a\", \"seconds\": 1, \"progress\": 0.5}", "not an object"),
        ("{\"name\": \"/home/me\", \"seconds\": 1}", "span name '/home/me' must be"),
        ("{\"name\": \"\", \"seconds\": 1}", "span name '' must be"),
        (&format!("{{\"name\": \"{}\", \"seconds\": 1}}", "x".repeat(65)), "must be 1 to 64"),
        ("{\"name\": \"a\", \"seconds\": -1}", "seconds -1 is not"),
        ("{\"name\": \"a\", \"seconds\": 1, \"start\": -2}", "start -2 is not"),
        ("{\"progress\": 0.5, \"start\": 2}", "not an object"),
        ("{\"name\": \"a\", \"seconds\": 1e999}", "not an object"),
        ("{\"progress\": 1.5}", "progress 1.5 is not between 0 and 1"),
        ("{\"progress\": -0.1}", "progress -0.1 is not between 0 and 1"),
    ] {
        let e = figures(&format!("{ok}{line}\n")).unwrap_err();
        assert!(e.starts_with("spans line 2: "), "{e}");
        assert!(e.contains(needle), "{e}");
    }
}

/// Runtime lines from two processes: the first's interpreter, every
/// distribution either imported; a path or a stray key is refused.
#[test]
fn runtime_lines_merge_and_a_path_is_refused() {
    let mut tally = Tally::default();
    let text = "{\"runtime\": {\"python\": \"3.11.7\", \"distributions\": {\"numpy\": \"2.4.6\"}}}\n\
                {\"runtime\": {\"python\": \"3.12.1\", \"distributions\": {\"torch\": \"2.5.1+cpu\"}}}\n";
    tally.add(text, |_, _| {}).unwrap();
    let r = tally.runtime.clone().unwrap();
    assert_eq!(r.python, "3.11.7");
    let names: Vec<&str> = r.distributions.keys().map(String::as_str).collect();
    assert_eq!(names, ["numpy", "torch"]);
    assert!(tally.figures().is_empty(), "a runtime line is no span");
    for (line, needle) in [
        (
            "{\"runtime\": {\"python\": \"/usr/bin/python3\", \"distributions\": {}}}",
            "is not a version",
        ),
        (
            "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {\"mine\": \"/home/me/x\"}}}",
            "runtime distribution 'mine'",
        ),
        (
            "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {}, \"user\": \"me\"}}",
            "unknown field",
        ),
        (
            "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {}}, \"progress\": 0.5}",
            "not an object",
        ),
    ] {
        let e = figures(&format!("{line}\n")).unwrap_err();
        assert!(e.starts_with("spans line 1: ") && e.contains(needle), "{e}");
    }
}

/// Two spans of 1e308 s add up to infinity: refused when read, never
/// written as null. An aggregate line that no calls could make is
/// refused with its line number.
#[test]
fn an_overflowing_sum_and_an_impossible_tally_are_refused() {
    let big = "{\"name\": \"x\", \"seconds\": 1e308}\n";
    let e = figures(&format!("{big}{big}")).unwrap_err();
    assert_eq!(e, "span 'x': its seconds add up to more than the largest number");
    let agg = |span: &str| {
        format!(
            "{{\"agg\": {{\"pid\": 1, \"forked\": false, \"main\": true, \"top\": [0, 0, 0], \"spans\": {{\"x\": {span}}}, \"slices\": [], \"unsliced\": 0}}}}\n"
        )
    };
    let ok = "{\"n\": 2, \"sum\": 30, \"self\": 20, \"beside\": 0, \"min\": 10, \"max\": 20, \"first\": 10, \"at\": 5, \"h\": [10, 1, 20, 1]}";
    let f = figures(&agg(ok)).unwrap();
    assert!((f[0].value - 30e-9).abs() < 1e-15 && f[1].value == 2.0, "{f:?}");
    for (bad, needle) in [
        (ok.replace("\"self\": 20", "\"self\": 40"), "disagree"),
        (ok.replace("[10, 1, 20, 1]", "[10, 1, 20]"), "pairs"),
        (ok.replace("[10, 1, 20, 1]", "[10, 1]"), "does not hold its calls"),
        (ok.replace("[10, 1, 20, 1]", "[99999, 2]"), "out of range"),
        (ok.replace("\"n\": 2", "\"n\": 0"), "no calls"),
    ] {
        let e = figures(&agg(&bad)).unwrap_err();
        assert!(e.starts_with("spans line 1: ") && e.contains(needle), "{e}");
    }
}

/// A refused target was found: it is warned of with its reason, never
/// as one that matched nothing; a wrapped one never called says so.
#[test]
fn refused_and_uncalled_targets_are_said_as_what_they_are() {
    let mut tally = Tally::default();
    let text = "{\"refused\": \"numpy:ndarray.sum\", \"why\": \"an attribute of an immutable built-in type cannot be wrapped\"}\n\
                {\"wrapped\": \"m:f\", \"span\": \"f\"}\n\
                {\"wrapped\": \"m:g\", \"span\": \"g\"}\n\
                {\"name\": \"g\", \"seconds\": 0.5}\n\
                {\"wrapped\": \"m:h\", \"span\": \"h\", \"at_least\": true}\n\
                {\"name\": \"h\", \"seconds\": 0.5}\n\
                {\"wrapped\": \"m:k\", \"span\": \"k\", \"at_least\": true}\n";
    tally.add(text, |_, _| {}).unwrap();
    let matched: Vec<String> = tally.matched().into_iter().collect();
    assert_eq!(matched, ["m:f", "m:g", "m:h", "m:k", "numpy:ndarray.sum"]);
    // A count that may miss calls through an old reference says it is a
    // lower bound; zero of them is no "never called".
    let bound =
        "(its attribute was replaced, so a call through a reference taken before is not counted)";
    assert_eq!(
        tally.warnings(),
        [
            "--span numpy:ndarray.sum was not wrapped: an attribute of an immutable built-in type cannot be wrapped".to_string(),
            "--span m:f was wrapped but never called: span 'f' 0 calls".to_string(),
            format!("--span m:h: span 'h' 1 calls is a lower bound {bound}"),
            format!("--span m:k was wrapped and no call through it was seen: span 'k' 0 calls counted, a lower bound {bound}"),
        ]
    );
}

#[test]
fn a_followed_file_yields_complete_lines_only_until_the_end() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("spans-follow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut f = SpansFile::create(&dir, "t").unwrap();
    let mut w = std::fs::OpenOptions::new().append(true).open(f.path()).unwrap();
    w.write_all(b"{\"progress\": 0.25}\n{\"name\": \"fit\", \"sec").unwrap();
    let mut seen = Vec::new();
    f.follow(false, |l, _| seen.push(format!("{l:?}"))).unwrap();
    assert_eq!(seen, ["Progress(0.25)"]);
    w.write_all(b"onds\": 2}\n{\"name\": \"fit\", \"seconds\": 1, \"start\": 7.5}").unwrap();
    f.follow(false, |_, t| seen.push(format!("fit x{}", t.count("fit")))).unwrap();
    assert_eq!(seen, ["Progress(0.25)", "fit x1"]);
    let said = f.finish().unwrap();
    assert_eq!(said.figures[0].value, 3.0);
    assert_eq!(said.figures[1].value, 2.0);
    let timed = said.timed;
    assert_eq!(
        timed,
        [super::Timed { name: "fit".to_string(), start: 7.5, seconds: 1.0, beside: false }],
        "only the span with a start is timed"
    );
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "the file was not removed");
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn stage_lines_become_rows_after_one_for_what_ran_before_the_first() {
    let line = |name: &str, pid: u32, start: u64, cpu: &str| {
        format!(
            "{{\"stage\": {{\"name\": \"{name}\", \"pid\": {pid}, \"start\": {start}, \"ns\": 500000000, \"cpu\": {cpu}, \"rss\": [100, 300], \"hwm\": 150, \"peak\": 400, \"reset\": true}}}}\n"
        )
    };
    // Out of order, and one from another process (a forked child's).
    let text = line("fit", 7, 4_000_000_000, "[2.5, 0.5, 3.0, 0.75]")
        + &line("prepare", 7, 3_000_000_000, "[2.0, 0.25, 2.5, 0.5]")
        + &line("other", 8, 3_500_000_000, "[0, 0, 1, 1]");
    let mut tally = Tally::default();
    tally.add(&text, |_, _| {}).unwrap();
    let rows = command_stages(&tally.stages, 1.0);
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["before_stages", "prepare", "fit"]);
    // Before: from the command's start (1 s) to the first stage's (3 s),
    // the CPU the process had used by then, and its peak so far.
    let before = &rows[0];
    assert_eq!((before.wall_s, before.user_s, before.sys_s), (2.0, 2.0, 0.25));
    assert_eq!((before.rss_end_bytes, before.peak_rss_bytes), (100, 150));
    let prepare = &rows[1];
    assert_eq!((prepare.start_s, prepare.wall_s), (2.0, 0.5));
    assert_eq!((prepare.user_s, prepare.sys_s), (0.5, 0.25));
    assert_eq!(
        (prepare.rss_start_bytes, prepare.rss_end_bytes, prepare.peak_rss_bytes),
        (100, 300, 400)
    );
    assert!(prepare.peak_reset);
    assert!(command_stages(&[], 0.0).is_empty());
    // CPU that runs backwards, or a stray field, is refused.
    let mut bad = Tally::default();
    let e = bad.add(&line("fit", 7, 1, "[3.0, 0.5, 2.0, 0.75]"), |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("stage 'fit': its CPU times"), "{e}");
    let stray = line("fit", 7, 1, "[0, 0, 1, 1]").replace("\"reset\"", "\"x\": 1, \"reset\"");
    assert!(Tally::default().add(&stray, |_, _| {}).is_err());
}

/// A slice says whether it ran beside the main thread (the helper keeps
/// slices per process, so the line's own `main` cannot); a helper older
/// than the flag wrote three elements, read as the main thread's.
#[test]
fn a_slice_carries_whether_it_ran_beside_the_main_thread() {
    let line = |slices: &str| {
        format!(
            "{{\"agg\": {{\"pid\": 1, \"forked\": false, \"main\": true, \"top\": [0, 0, 0], \"spans\": {{}}, \"slices\": [{slices}], \"unsliced\": 0}}}}"
        )
    };
    use super::line::{Line, parse_line};
    let Some(Line::Agg(agg)) =
        parse_line(&line("[\"a\", 5, 7, 0], [\"bg\", 6, 2, 1], [\"old\", 9, 1]")).unwrap()
    else {
        panic!("not an agg line")
    };
    let flags: Vec<(&str, bool)> = agg.slices.iter().map(|s| (s.name.as_str(), s.beside)).collect();
    assert_eq!(flags, [("a", false), ("bg", true), ("old", false)]);
    assert!(parse_line(&line("[\"a\", 5]")).is_err(), "a slice of two elements");
}
