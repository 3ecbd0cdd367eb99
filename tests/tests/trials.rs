//! `--mode trials`: each trial a fresh process, stages interleaved, warm-up
//! recorded but not counted, statistics over the counted trials.

use harness::reports::{self, stage};
use harness::{coordinator_with_output, run};
use report::stats::IntervalMethod;

#[test]
fn trials_are_fresh_interleaved_and_summarised() {
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args([
        "--mode", "trials", "--trials", "4", "--warmup", "1", "--stage", "sleep:30", "--stage",
        "noop",
    ]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);

    // Every trial ran in its own process, in the order A B A B …
    let pids = f.worker_pids();
    assert_eq!(pids.len(), 10, "(4 + 1) trials × 2 stages, one process each");
    let mut unique = pids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 10);
    let order: Vec<&str> = f
        .stderr
        .lines()
        .filter(|l| l.contains("stage started"))
        .map(|l| if l.contains("key=sleep:30") { "A" } else { "B" })
        .collect();
    assert_eq!(order.concat(), "ABABABABAB");
    f.assert_no_worker_left();

    let report = reports::read(&out);
    let r = reports::trials(&report);
    let t = &r.trials["sleep:30"];
    assert_eq!(t.n, 4);
    assert_eq!(t.warmup, 1);
    let walls = t.samples["wall_s"].clone();
    assert_eq!(walls.len(), 4);
    assert_eq!(t.warmup_samples["wall_s"].len(), 1);
    assert!(walls.iter().all(|w| *w >= 0.03), "{walls:?}");
    // The summary is computed from exactly those samples.
    let mut sorted = walls.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[1] + sorted[2]) / 2.0;
    let s = &t.summary["wall_s"];
    assert!((s.median - median).abs() < 1e-12);
    assert_eq!(s.min, sorted[0]);
    assert_eq!(s.max, sorted[3]);
    // Four trials have no 95% interval: the interval is their range, with
    // the range's coverage for four (87.5%).
    assert!(s.median_ci95.is_none(), "4 trials have no 95% interval: {s:?}");
    let i = &s.median_interval;
    assert_eq!((i.method, i.n), (IntervalMethod::Range, 4), "{i:?}");
    assert_eq!((i.low, i.high), (sorted[0], sorted[3]));
    assert_eq!(i.coverage, 0.875);
    assert_eq!(stage(&report, "sleep:30").wall_s, s.median);
    // Peak RSS per trial is that trial's own process's, so each is small.
    for v in &t.samples["peak_rss_bytes"] {
        assert!(*v < 64.0 * 1024.0 * 1024.0);
    }
    assert!(r.outlier_rule.contains("Tukey"));
    assert!(f.stdout.contains("interval of median"), "{}", f.stdout);
    assert!(f.stdout.contains("(range, 87.5%)") && !f.stdout.contains("95% CI"), "{}", f.stdout);
    report::verify::verify(&out).expect("a trials run verifies");
}

/// Storage and system-call I/O per trial, for the whole tree: a command
/// whose grandchild writes 2 MiB and syncs it shows at least that written
/// (`write_bytes`, `wchar`), with statistics; the control, `true`, writes
/// nothing to storage.
#[test]
fn a_trees_writes_are_counted_per_trial_with_statistics() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("written.bin");
    let line = format!(
        "sh -c 'dd if=/dev/zero of={} bs=64k count=32 conv=fsync status=none'",
        file.display()
    );
    let (_tmp, out, mut c) = coordinator_with_output();
    let tsv = dir.path().join("benchmark.tsv");
    c.args(["--mode", "trials", "--trials", "3", "--warmup", "0"]);
    c.args(["--command", &line, "--name", "writes", "--command", "true", "--name", "control"]);
    c.arg("--export-benchmark-tsv").arg(&tsv);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let r = reports::trials(&report);
    snakemake_table(&std::fs::read_to_string(&tsv).unwrap(), r);
    let mib2 = 2u64 << 20;
    let writes = &r.trials["writes"];
    for name in ["write_bytes", "wchar"] {
        let samples = &writes.samples[name];
        assert_eq!(samples.len(), 3, "{name}: {writes:?}");
        assert!(samples.iter().all(|v| *v >= mib2 as f64), "{name}: {samples:?}");
        assert!(writes.summary[name].median >= mib2 as f64);
    }
    let record = stage(&report, "writes");
    let io = record.io.as_ref().expect("the stage's I/O");
    assert_eq!(io.io_method, "procfs");
    assert!(io.write_bytes >= mib2, "{record:?}");
    assert!(!record.figures.contains_key("write_bytes"), "counters are not figures");
    let control = stage(&report, "control").io.as_ref().expect("the control's I/O");
    assert_eq!(control.write_bytes, 0, "{control:?}");
    assert!(control.wchar < 64 << 10, "{control:?}");
}

/// The benchmark table read as Snakemake's documentation lists its columns
/// (`s`, `h:m:s`, `max_rss`, `max_vms`, `max_uss`, `max_pss`, `io_in`,
/// `io_out`, `mean_load`, `cpu_time`; the extended format's `jobid` and
/// `rule` after them): a row per stage and trial, in its units, each value
/// the report's own trial sample.
fn snakemake_table(text: &str, r: &report::modes::trials::Section) {
    const DOCUMENTED: [&str; 10] = [
        "s",
        "h:m:s",
        "max_rss",
        "max_vms",
        "max_uss",
        "max_pss",
        "io_in",
        "io_out",
        "mean_load",
        "cpu_time",
    ];
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    assert_eq!(header[..10], DOCUMENTED, "{header:?}");
    assert_eq!(header[10..12], ["jobid", "rule"], "{header:?}");
    let rows: Vec<std::collections::HashMap<&str, &str>> = lines
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), header.len(), "{l}");
            header.iter().copied().zip(cols).collect()
        })
        .collect();
    assert_eq!(rows.len(), 6, "two stages, three trials each: {text}");
    let mb = |v: f64| format!("{:.2}", v / (1024.0 * 1024.0));
    for (i, row) in rows.iter().enumerate() {
        let stage = if i < 3 { "writes" } else { "control" };
        let trial = i % 3;
        assert_eq!((row["rule"], row["jobid"]), (stage, (trial + 1).to_string().as_str()));
        let samples = &r.trials[stage].samples;
        let wall = samples["wall_s"][trial];
        assert_eq!(row["s"], format!("{wall:.4}"));
        assert_eq!(row["h:m:s"], "0:00:00");
        assert_eq!(row["io_out"], mb(samples["write_bytes"][trial]), "{row:?}");
        assert_eq!(row["io_in"], mb(samples["read_bytes"][trial]), "{row:?}");
        assert_eq!(row["max_rss"], mb(samples["tree_peak_bytes"][trial]), "{row:?}");
        let cpu = samples["cpu_s"][trial];
        assert_eq!(row["cpu_time"], format!("{cpu:.2}"));
        assert_eq!(row["mean_load"], format!("{:.2}", 100.0 * cpu / wall));
        for unmeasured in ["max_vms", "max_uss", "max_pss", "threads", "resources"] {
            assert_eq!(row[unmeasured], "NA", "{unmeasured}: {row:?}");
        }
    }
    let written: f64 = rows[0]["io_out"].parse().unwrap();
    assert!(written >= 2.0, "the writing stage's io_out is in MB: {written}");
}
