//! What is derived from report.json: plots (PNG and SVG) that `verify`
//! checks and `render` redraws byte for byte, exports that never overwrite,
//! a dashboard that is idempotent and never takes over a user's README, and
//! compare's forest plot.

use harness::{coordinator, coordinator_with_output, json, run};
use std::path::{Path, PathBuf};

fn trials_run(
    tmp_keep: &mut Vec<tempfile::TempDir>,
    extra: &[&str],
) -> (PathBuf, harness::Finished) {
    let (tmp, out, mut c) = coordinator_with_output();
    c.args(["--quiet", "--mode", "trials", "--trials", "3", "--warmup", "1"]);
    c.args(["--stage", "noop", "--stage", "sleep:5"]).args(extra);
    let f = run(c);
    tmp_keep.push(tmp);
    (out, f)
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

fn svg_size(text: &str) -> (u32, u32) {
    let attr = |name: &str| {
        let at = text.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        text[at..].split('"').next().unwrap().parse::<u32>().unwrap()
    };
    (attr("width"), attr("height"))
}

fn verify(dir: &Path) -> harness::Finished {
    let mut c = coordinator();
    c.arg("verify").arg(dir);
    run(c)
}

#[test]
fn plots_exist_are_checked_by_verify_and_redrawn_byte_for_byte() {
    let mut keep = Vec::new();
    let (out, f) = trials_run(&mut keep, &[]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    for name in ["stages", "trials"] {
        let png = std::fs::read(out.join(format!("plots/{name}.png"))).unwrap();
        let svg = std::fs::read_to_string(out.join(format!("plots/{name}.svg"))).unwrap();
        assert!(png.len() > 5_000, "{name}.png is {} bytes", png.len());
        assert!(svg.starts_with("<svg"), "{name}.svg");
        assert!(svg.contains("sleep:5"), "{name}.svg has no stage label");
        assert_eq!(png_size(&png), svg_size(&svg), "{name}: PNG and SVG sizes differ");
    }
    assert!(!out.join("plots/cold-prep.svg").exists(), "a trials run has no cold-prep plot");
    assert_eq!(verify(&out).code(), Some(0));

    // A changed pixel is caught like a changed figure, and render redraws it.
    let original = std::fs::read(out.join("plots/trials.png")).unwrap();
    let mut bytes = original.clone();
    let last = bytes.len() - 20;
    bytes[last] ^= 1;
    std::fs::write(out.join("plots/trials.png"), &bytes).unwrap();
    let f = verify(&out);
    assert_eq!(f.code(), Some(3), "{}", f.stdout);
    assert!(f.stderr.contains("plots/trials.png differs"), "{}", f.stderr);
    std::fs::remove_file(out.join("plots/stages.svg")).unwrap();
    let f = verify(&out);
    assert!(f.stderr.contains("cannot read plots/stages.svg"), "{}", f.stderr);

    let mut c = coordinator();
    c.arg("render").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(std::fs::read(out.join("plots/trials.png")).unwrap(), original);
    assert_eq!(verify(&out).code(), Some(0));
}

#[test]
fn exports_hold_every_stage_and_never_overwrite() {
    let mut keep = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let (jsonf, csvf, mdf) =
        (dir.path().join("r.json"), dir.path().join("r.csv"), dir.path().join("r.md"));
    let args = [
        "--export-json",
        jsonf.to_str().unwrap(),
        "--export-csv",
        csvf.to_str().unwrap(),
        "--export-markdown",
        mdf.to_str().unwrap(),
    ];
    let (out, f) = trials_run(&mut keep, &args);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = json(&out.join("report.json"));

    let exported = json(&jsonf);
    assert_eq!(exported["report_body_sha256"], report["body_sha256"]);
    let results = exported["results"].as_array().unwrap();
    let stages: Vec<&str> = results.iter().map(|r| r["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["noop", "sleep:5"]);
    assert_eq!(results[1]["trials"]["samples"]["wall_s"].as_array().unwrap().len(), 3);

    let csv = std::fs::read_to_string(&csvf).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(header.len(), row.len());
    assert_eq!(row[0], "sleep:5");
    assert_eq!(row[1], "3");
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let median: f64 = row[col("wall_median_s")].parse().unwrap();
    let typed = harness::reports::read(&out);
    assert_eq!(median, harness::reports::trials(&typed).trials["sleep:5"].summary["wall_s"].median);
    assert!(median >= 0.005, "sleep:5 took {median} s");

    assert_eq!(std::fs::read(&mdf).unwrap(), std::fs::read(out.join("summary.md")).unwrap());

    // An existing export path is refused before anything runs.
    let before = std::fs::read(&csvf).unwrap();
    let (out2, f) = trials_run(&mut keep, &["--export-csv", csvf.to_str().unwrap()]);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(
        f.stderr.contains("--export-csv") && f.stderr.contains("already exists"),
        "{}",
        f.stderr
    );
    assert!(!out2.exists(), "a run started although its export path exists");
    assert_eq!(std::fs::read(&csvf).unwrap(), before);

    // So is one whose folder does not exist, naming the folder.
    let missing = csvf.parent().unwrap().join("no-such-folder/b.json");
    let (out3, f) = trials_run(&mut keep, &["--export-json", missing.to_str().unwrap()]);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("no-such-folder' does not exist"), "{}", f.stderr);
    assert!(!out3.exists(), "a run started although its export folder is missing");

    // And one that is the run directory itself, or inside it: refused
    // before anything is measured, never with "create it first".
    for inside in ["", "report.json"] {
        let (_tmp, out, mut c) = coordinator_with_output();
        let export = out.join(inside);
        c.args(["--quiet", "--stage", "noop", "--export-json"]).arg(&export);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{}", f.stderr);
        assert!(f.stderr.contains("is inside the run directory"), "{}", f.stderr);
        assert!(!f.stderr.contains("create it first"), "{}", f.stderr);
        assert!(!out.exists(), "a run started although its export is inside it");
    }
}

#[test]
fn the_stages_plot_says_how_the_stages_were_isolated() {
    for (isolation, says) in
        [("run", "one process for the whole run"), ("stage", "one process per stage")]
    {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.args(["--quiet", "--stage", "noop", "--stage", "noop", "--isolation", isolation]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        let svg = std::fs::read_to_string(out.join("plots/stages.svg")).unwrap();
        assert!(svg.contains(says), "{isolation}: the caption does not say {says:?}");
    }
}

#[test]
fn the_dashboard_lists_runs_newest_first_idempotently_and_spares_a_users_readme() {
    let base = tempfile::tempdir().unwrap();
    let runs = base.path().join("runs");
    let mut c = coordinator();
    c.args(["--quiet", "--mode", "diagnostic", "--stage", "noop", "--output"]).arg(runs.join("a"));
    assert_eq!(run(c).code(), Some(0));
    let mut c = coordinator();
    c.args(["--quiet", "--mode", "diagnostic", "--stage", "fail", "--output"])
        .arg(runs.join("nested/b"));
    assert_eq!(run(c).code(), Some(1));

    // Both runs may start within one second: date the failed one later by
    // hand (it has no report to bind its declaration).
    let decl = runs.join("nested/b/declaration.json");
    let text = std::fs::read_to_string(&decl).unwrap();
    let at = text.find("\"created_utc\": \"").unwrap() + 16;
    let end = at + text[at..].find('"').unwrap();
    std::fs::write(&decl, format!("{}2099-01-01T00:00:00Z{}", &text[..at], &text[end..])).unwrap();

    let dashboard = |dir: &Path| {
        let mut c = coordinator();
        c.arg("dashboard").arg(dir);
        run(c)
    };
    let f = dashboard(&runs);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(f.stdout.starts_with("wrote"), "{}", f.stdout);
    let first = std::fs::read_to_string(runs.join("README.md")).unwrap();
    let rows: Vec<&str> =
        first.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| run")).collect();
    assert_eq!(rows.len(), 2, "{first}");
    assert!(
        rows[0].starts_with("| nested/b |") && rows[0].contains("failed: stage_failed"),
        "{first}"
    );
    assert!(rows[1].starts_with("| [a](a/summary.md) |") && rows[1].contains("| ok |"), "{first}");
    // A failure's reason, never its message (which may name a file or a series).
    assert!(!first.contains("failed as asked"), "{first}");
    // index.html: the same rows, the ok run linked to its report.html.
    let page = std::fs::read_to_string(runs.join("index.html")).unwrap();
    assert_eq!(page.matches("<tr data-run=").count(), 2, "{page}");
    assert!(page.contains("href=\"a/report.html\""), "{page}");
    assert!(!page.contains("href=\"nested/b"), "a failed run has no page to link: {page}");

    let f = dashboard(&runs);
    assert!(f.stdout.starts_with("unchanged"), "{}", f.stdout);
    assert_eq!(std::fs::read_to_string(runs.join("README.md")).unwrap(), first);

    // A report whose body no longer matches its digest is flagged.
    let report = runs.join("a/report.json");
    let text = std::fs::read_to_string(&report).unwrap().replacen(
        "\"run_wall_s\": ",
        "\"run_wall_s\": 1",
        1,
    );
    std::fs::write(&report, text).unwrap();
    dashboard(&runs);
    let index = std::fs::read_to_string(runs.join("README.md")).unwrap();
    assert!(
        index.contains("**does not verify**: report.json body does not match its body_sha256"),
        "{index}"
    );

    // A README.md the dashboard did not write is the user's.
    let mine = runs.join("nested/README.md");
    std::fs::write(&mine, "my notes\n").unwrap();
    let f = dashboard(&runs.join("nested"));
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("was not written by `coordinator dashboard`"), "{}", f.stderr);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes\n");
    // So is an index.html: refused, left alone, and no README.md written.
    let other = base.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("index.html"), "<p>mine</p>").unwrap();
    let f = dashboard(&other);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("index.html' exists and was not written"), "{}", f.stderr);
    assert_eq!(std::fs::read_to_string(other.join("index.html")).unwrap(), "<p>mine</p>");
    assert!(!other.join("README.md").exists());
}

#[test]
fn the_dashboard_gives_a_campaign_a_row_and_lists_its_runs() {
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir(base.path().join("work")).unwrap();
    let file = base.path().join("c.toml");
    std::fs::write(
        &file,
        "[campaign]\nname = \"quick\"\ntrials = 2\nscratch = \"work\"\n\n[[pipeline]]\nname = \"s\"\nargv = [\"sh\", \"-c\", \"echo x > out\"]\ncwd = \"work\"\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n",
    )
    .unwrap();
    let runs = base.path().join("runs");
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(runs.join("camp"));
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let mut c = coordinator();
    c.arg("dashboard").arg(&runs);
    assert_eq!(run(c).code(), Some(0));
    let index = std::fs::read_to_string(runs.join("README.md")).unwrap();
    let rows: Vec<&str> =
        index.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| run")).collect();
    let campaign = rows.iter().find(|r| r.starts_with("| [camp](camp/summary.md)")).expect(&index);
    assert!(campaign.contains("| campaign | ok | 2 steps |"), "{campaign}");
    assert!(campaign.contains("2 trials per step; resume "), "{campaign}");
    assert!(campaign.contains("2 of 2 resumed trials identical to cold"), "{campaign}");
    // Its runs: two cold, two resumed.
    let inner = rows.iter().filter(|r| r.contains("camp/runs/")).count();
    assert_eq!(inner, 4, "{index}");
}

#[test]
fn compare_writes_a_forest_plot_into_a_new_directory_only() {
    let mut keep = Vec::new();
    let (a, f) = trials_run(&mut keep, &[]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let (b, _) = trials_run(&mut keep, &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let mut c = coordinator();
    c.arg("compare").arg(&a).arg(&b).args(["--threshold", "1000", "--output"]).arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}{}", f.stdout, f.stderr);
    let svg = std::fs::read_to_string(out.join("forest.svg")).unwrap();
    assert!(svg.contains("sleep:5 wall_s"), "the forest plot has no row label");
    let png = std::fs::read(out.join("forest.png")).unwrap();
    assert_eq!(png_size(&png), svg_size(&svg));
    assert!(std::fs::read_to_string(out.join("compare.txt")).unwrap().contains("verdict"));

    let mut c = coordinator();
    c.arg("compare").arg(&a).arg(&b).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("already exists"), "{}", f.stderr);
    assert_eq!(std::fs::read_to_string(out.join("forest.svg")).unwrap(), svg);
}

/// `--export-folded` of a run that recorded no span and sampled nothing:
/// the run is complete and measured what it was asked to, so it exits 0,
/// says in one warning why nothing was folded, and writes no file (it once
/// exited 2, "nothing was measured", after a whole run).
#[test]
fn a_folded_export_of_a_run_without_spans_is_a_warning_not_a_failure() {
    let (tmp, out, mut c) = harness::coordinator_with_output();
    let folded = tmp.path().join("stacks.folded");
    c.args(["--quiet", "--stage", "noop", "--export-folded"]).arg(&folded);
    let f = harness::run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let warned: Vec<&str> = f.stderr.lines().filter(|l| l.contains("--export-folded")).collect();
    assert_eq!(warned.len(), 1, "{}", f.stderr);
    assert!(warned[0].starts_with("warning: --export-folded '"), "{}", warned[0]);
    assert!(warned[0].contains("not written: the run recorded no span"), "{}", warned[0]);
    assert!(!folded.exists(), "an empty export was written");
    assert!(out.join("report.json").is_file());
}

/// `--export-bmf` and `--export-github-benchmark` on a run of trials: one
/// benchmark per stage (and `STAGE/span:NAME` per span), each figure's
/// trial median bounded by its interval, the report's digest in `extra`;
/// `render DIR` writes the same bytes again.
#[test]
fn a_runs_dashboard_exports_name_its_stages_and_spans_with_their_medians_and_intervals() {
    let mut keep = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let (bmf, gh) = (dir.path().join("bmf.json"), dir.path().join("gh.json"));
    let span = harness::repo().join("tests/scripts/spans.py");
    let mut c = coordinator();
    let py = harness::python(&mut c);
    let command = format!("{py} '{}'", span.display());
    let args = [
        "--command",
        &command,
        "--export-bmf",
        bmf.to_str().unwrap(),
        "--export-github-benchmark",
        gh.to_str().unwrap(),
    ];
    let (out, f) = trials_run(&mut keep, &args);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let typed = harness::reports::read(&out);
    let trials = &harness::reports::trials(&typed).trials;
    let b = json(&bmf);
    let wall = &trials["sleep:5"].summary["wall_s"];
    assert_eq!(b["sleep:5"]["wall_s"]["value"], wall.median);
    assert_eq!(b["sleep:5"]["wall_s"]["lower_value"], wall.median_interval.low);
    assert_eq!(b["sleep:5"]["wall_s"]["upper_value"], wall.median_interval.high);
    // The command's spans (tests/scripts/spans.py: load 0.5 + 0.25 s a trial).
    assert_eq!(b["command/span:load"]["time_s"]["value"], 0.75);
    assert_eq!(b["command/span:load"]["calls"]["value"], 2.0);
    let rows = json(&gh);
    let rows = rows.as_array().unwrap();
    let row =
        |name: &str| rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(row("command/span:load")["unit"], "s");
    assert_eq!(row("noop/peak_rss_bytes")["unit"], "bytes");
    let extra = row("sleep:5")["extra"].as_str().unwrap();
    let digest = json(&out.join("report.json"))["body_sha256"].as_str().unwrap().to_string();
    assert!(extra.starts_with("trials: 3\n") && extra.ends_with(&digest), "{extra}");

    // The same bytes from `render`.
    let again = dir.path().join("again.json");
    let mut c = coordinator();
    c.arg("render").arg(&out).arg("--export-bmf").arg(&again);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&bmf).unwrap());
}
