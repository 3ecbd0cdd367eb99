//! Before and after a fix: the example pipeline's campaign, then the same
//! chain with its largest repeated span persisted (the max-likelihood fit
//! written once and loaded on a resume), compared as campaigns. The
//! comparison must call the resume faster and name that span; the other way
//! round, slower, a regression. Both ways, from two real campaigns.

use harness::{coordinator, python_on_path, repo, run};
use std::path::{Path, PathBuf};

/// The fix: the fit kept in the stage's scratch directory (reset with the
/// stage on a cold run), loaded when it is there.
const FIXED: &str = r#"    fit_file = os.path.join(here, "fit.json")
    if os.path.exists(fit_file):
        with open(fit_file) as f:
            fit = json.load(f)
    else:
        fit = max_lh_fit_recompute(i, data)
        write_atomically(fit_file, json.dumps(fit))"#;

/// The example's chain and a campaign of cold and resume steps, five trials
/// each (a rank test needs four a side to say anything), in `dir`.
fn chain_campaign(dir: &Path, fixed: bool) -> PathBuf {
    let example = repo().join("examples/pipeline");
    std::fs::copy(example.join("chain.py"), dir.join("chain.py")).unwrap();
    let fitting = std::fs::read_to_string(example.join("fitting.py")).unwrap();
    let line = "    fit = max_lh_fit_recompute(i, data)";
    assert_eq!(fitting.matches(line).count(), 1, "the example's recompute moved");
    // The recompute made heavier than the example's (both campaigns), so
    // it dominates a resumed stage beyond this machine's noise.
    let units = "RECOMPUTE_UNITS = 50\n";
    assert_eq!(fitting.matches(units).count(), 1, "the example's recompute units moved");
    let fitting = fitting.replace(units, "RECOMPUTE_UNITS = 200\n");
    let fitting = if fixed { fitting.replace(line, FIXED) } else { fitting };
    std::fs::write(dir.join("fitting.py"), fitting).unwrap();
    std::fs::create_dir(dir.join("scratch")).unwrap();
    let toml = std::fs::read_to_string(example.join("campaign.toml")).unwrap();
    let cut = toml.find("# Killed half-way").expect("the example's interrupted steps");
    let toml = toml[..cut].replace("trials = 3\n", "trials = 5\n");
    let (out, f) = campaign_with_python(dir, &toml);
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    out
}

/// [`campaign`] with the helper's Python first on PATH (the example's argv
/// says python3).
fn campaign_with_python(dir: &Path, text: &str) -> (PathBuf, harness::Finished) {
    let file = dir.join("campaign.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("campaign");
    let mut c = coordinator();
    python_on_path(&mut c);
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    (out.clone(), run(c))
}

fn compare(a: &Path, b: &Path) -> harness::Finished {
    let mut c = coordinator();
    c.arg("compare").arg(a).arg(b);
    run(c)
}

#[test]
fn a_fix_that_persists_the_largest_repeated_span_makes_the_resume_faster_and_is_named() {
    let (before, after) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = chain_campaign(before.path(), false);
    let b = chain_campaign(after.path(), true);

    // The campaigns ran one after the other: a step the fix did not touch
    // may still differ by the machine's drift, so the exit code is the
    // resume's row's, read below, not asserted whole.
    let f = compare(&a, &b);
    assert!(matches!(f.code(), Some(0 | 4)), "{}\n{}", f.stdout, f.stderr);
    let resume = f.stdout.lines().find(|l| l.starts_with("resume ") && l.contains("total_s"));
    let resume = resume.expect(&f.stdout);
    assert!(resume.ends_with(" faster"), "{resume}");
    let note = f.stdout.lines().find(|l| l.starts_with("resume: ")).expect(&f.stdout);
    assert!(note.starts_with("resume: B is faster than A"), "{note}");
    assert!(note.contains("what changed most: span max_lh_fit_recompute in "), "{note}");
    assert!(note.contains("(faster)"), "{note}");
    // The span's rows: gone from every stage on a resume after the fix.
    let span_rows: Vec<&str> = f
        .stdout
        .lines()
        .filter(|l| l.starts_with("resume/") && l.contains("span:max_lh_fit_recompute_s"))
        .collect();
    assert_eq!(span_rows.len(), 3, "{}", f.stdout);
    assert!(span_rows.iter().all(|r| r.ends_with("faster")), "{span_rows:?}");
    assert!(f.stdout.contains("comparability (A | B):"), "{}", f.stdout);

    // The other way round: the resume got slower, beyond the 5% threshold.
    let f = compare(&b, &a);
    assert_eq!(f.code(), Some(4), "{}\n{}", f.stdout, f.stderr);
    let resume = f.stdout.lines().find(|l| l.starts_with("resume ") && l.contains("total_s"));
    assert!(resume.expect(&f.stdout).ends_with("SLOWER (regressed)"), "{}", f.stdout);
    let note = f.stdout.lines().find(|l| l.starts_with("resume: ")).expect(&f.stdout);
    assert!(note.starts_with("resume: B is slower than A"), "{note}");
    assert!(note.contains("span max_lh_fit_recompute in "), "{note}");

    // A campaign against a run is refused in one line.
    let run_dir = a.join("runs/cold/1");
    let f = compare(&a, &run_dir);
    assert_eq!(f.code(), Some(2), "{}\n{}", f.stdout, f.stderr);
    assert!(f.stderr.contains("one is a campaign and the other a run"), "{}", f.stderr);
}
