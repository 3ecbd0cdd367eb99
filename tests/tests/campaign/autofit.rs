//! Seed 002's own library (issue 43): examples/autofit, a PyAutoFit chain
//! of two Dynesty searches with nothing in it edited, its internals named
//! in the campaign file by qualname. With `STAGEBENCH_AUTOFIT_PYTHON`
//! naming a Python (≥ 3.12) with autofit; SKIPPED otherwise.

use harness::{coordinator, repo, run, run_within};

/// Cold, resume and killed after the first search's recompute, two trials
/// each: the cold runs differ among themselves (Dynesty is not seeded),
/// the resume loads both searches (their sampling skipped), and after the
/// kill the first search is loaded, the second not yet done, and only
/// what finished before the kill is a repeat.
#[test]
fn the_autofit_example_is_read_call_by_call_against_its_cold_runs() {
    let python = match std::env::var("STAGEBENCH_AUTOFIT_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            let why = "STAGEBENCH_AUTOFIT_PYTHON names no Python with autofit";
            return harness::skip(
                "the_autofit_example_is_read_call_by_call_against_its_cold_runs",
                why,
            );
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let example = repo().join("examples/autofit");
    std::fs::copy(example.join("chain.py"), tmp.path().join("chain.py")).unwrap();
    std::fs::create_dir(tmp.path().join("scratch")).unwrap();
    let toml = std::fs::read_to_string(example.join("campaign.toml")).unwrap();
    assert!(toml.contains("trials = 3\n"));
    let file = tmp.path().join("campaign.toml");
    std::fs::write(&file, toml.replace("trials = 3\n", "trials = 2\n")).unwrap();
    let out = tmp.path().join("campaign");
    let mut c = coordinator();
    let bin = std::path::Path::new(&python).parent().unwrap().display().to_string();
    c.env("PATH", format!("{bin}:{}", std::env::var("PATH").unwrap_or_default()));
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    // Seven runs of two unseeded Dynesty searches: about 25 s on an idle
    // 2-core machine, three times that on a busy one.
    let f = run_within(c, std::time::Duration::from_secs(600));
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let r = harness::reports::campaign(&out);
    let j: Vec<&str> = r.judgment.iter().map(String::as_str).collect();
    let after = |start: &str| {
        let i =
            j.iter().position(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {j:?}"));
        j[i..].join("\n")
    };
    assert!(j[1].starts_with("Cold runs differ among themselves"), "{j:?}");
    assert!(j[1].contains("identity_exclude (**/*.png) left"), "{}", j[1]);
    let resume = after("Resuming (resume)");
    assert!(
        resume.contains("chain/search_fit #1 › start_resume_fit"),
        "sampling skipped: {resume}"
    );
    assert!(resume.contains("It loaded 2 call(s)"), "{resume}");
    assert!(
        resume.contains("differed only in files the cold runs differ in among themselves"),
        "{resume}"
    );
    let killed = after("Killed with SIGKILL at chain:span:max_lh_recompute:1");
    assert!(
        killed.contains("It loaded 1 call(s)") && killed.contains("chain/search_fit #1 took"),
        "{killed}"
    );
    assert!(
        killed.contains("Not yet done at the kill") && killed.contains("chain/search_fit #2"),
        "{killed}"
    );
    let repeated = killed.lines().find(|l| l.starts_with("It repeated")).unwrap();
    assert!(repeated.contains("max_lh_recompute"), "{repeated}");
    assert!(
        !repeated.contains("start_resume_fit") && !repeated.contains("search_fit"),
        "{repeated}"
    );
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    assert_eq!(run(c).code(), Some(0));
}
