//! `coordinator campaign`: a scripted sequence of cold, resume and
//! interrupted recipe runs, decomposed, judged, hash-bound; and a campaign
//! file with a mistake refused before anything runs.

use harness::data::tiny;
use harness::{coordinator, json, run};

const CAMPAIGN: &str = r#"
[campaign]
name = "tiny"
trials = 2
epochs = 2

[[step]]
name = "cold"
kind = "cold"

[[step]]
name = "resume_load"
kind = "resume"
policy = "load"

[[step]]
name = "resume_recompute"
kind = "resume"
policy = "recompute"

[[step]]
name = "interrupted_cache"
kind = "interrupted"
kill_at = "cache_prepare:0.5"

[[step]]
name = "interrupted_train"
kind = "interrupted"
kill_at = "train:0.75"
"#;

fn campaign_file(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let data = tiny().frozen.display().to_string();
    let text = text.replacen("[campaign]\n", &format!("[campaign]\ndata = \"{data}\"\n"), 1);
    let path = dir.join("campaign.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_campaign_decomposes_judges_and_proves_interrupted_runs_lost_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let file = campaign_file(tmp.path(), CAMPAIGN);
    let out = tmp.path().join("campaign");
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let r = json(&out.join("report.json"));
    assert_eq!(r["schema"], "stagebench.campaign");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    for step in steps {
        let trials = step["trials"].as_array().unwrap();
        assert_eq!(trials.len(), 2, "{}", step["name"]);
        for t in trials {
            assert_eq!(t["identical_to_cold"], true, "{} {}", step["name"], t["run"]);
            assert_eq!(t["state_sha256"], r["reference_state_sha256"]);
        }
        // Components add up to the stage's wall (start-up aside).
        for (key, part) in step["median"].as_object().unwrap() {
            let inside: f64 = part["components"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| *k != "startup")
                .map(|(_, v)| v.as_f64().unwrap())
                .sum();
            let wall = part["wall_s"].as_f64().unwrap();
            assert!((inside - wall).abs() <= 1e-6 + 0.02 * wall, "{key}: {inside} vs {wall}");
        }
    }
    let by_name = |n: &str| steps.iter().find(|s| s["name"] == n).unwrap();
    let comp = |s: &serde_json::Value, c: &str| -> f64 {
        s["median"]
            .as_object()
            .unwrap()
            .values()
            .map(|p| p["components"][c].as_f64().unwrap())
            .sum()
    };
    assert!(comp(by_name("cold"), "work") > 0.0);
    assert_eq!(comp(by_name("resume_load"), "work"), 0.0, "a complete resume did work");
    assert!(comp(by_name("resume_recompute"), "recompute") > 0.0);
    assert_eq!(comp(by_name("resume_load"), "recompute"), 0.0);
    for s in ["interrupted_cache", "interrupted_train"] {
        let t = &by_name(s)["trials"][0];
        assert!(t["killed"]["wall_s"].as_f64().unwrap() > 0.0, "{s}");
        assert_eq!(
            json(&out.join(t["killed"]["run"].as_str().unwrap()).join("failure.json"))["reason"],
            "killed_at_point"
        );
        assert!(comp(by_name(s), "work") > 0.0, "{s}: the resume had nothing left to do");
    }
    // The judgment is computed: it quotes the measured ratio.
    let judgment: Vec<&str> =
        r["judgment"].as_array().unwrap().iter().map(|j| j.as_str().unwrap()).collect();
    let ratio = by_name("resume_load")["median_total_s"].as_f64().unwrap()
        / by_name("cold")["median_total_s"].as_f64().unwrap();
    assert!(judgment.iter().any(|j| j.contains(&format!("{ratio:.3}×"))), "{judgment:?}");
    assert!(
        judgment.iter().any(|j| j.contains("identical to the cold run's in 2 of 2")),
        "{judgment:?}"
    );
    for f in ["summary.md", "plots/campaign.svg", "plots/campaign.png"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(judgment[0]));
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(!text.contains(tmp.path().to_str().unwrap()), "the report holds a path");

    // Verify checks the campaign, every run in it, and what it renders.
    let verify = || {
        let mut c = coordinator();
        c.arg("verify").arg(&out);
        run(c)
    };
    let v = verify();
    assert_eq!(v.code(), Some(0), "{}", v.stderr);
    let run_report = out.join("runs/resume_load/1/report.json");
    let original = std::fs::read(&run_report).unwrap();
    std::fs::write(
        &run_report,
        String::from_utf8_lossy(&original).replacen("0.", "1.", 1).as_bytes(),
    )
    .unwrap();
    let v = verify();
    assert_eq!(v.code(), Some(3), "{}", v.stderr);
    assert!(v.stderr.contains("runs/resume_load/1/report.json"), "{}", v.stderr);
    std::fs::write(&run_report, original).unwrap();
    std::fs::write(out.join("summary.md"), summary.replace("Judgment", "Verdict")).unwrap();
    let v = verify();
    assert_eq!(v.code(), Some(3), "{}", v.stderr);
    assert!(v.stderr.contains("summary.md"), "{}", v.stderr);
}

#[test]
fn a_campaign_file_with_a_mistake_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    for (mistake, needle) in [
        (
            "[campaign]\nname = \"x\"\ncolour = \"red\"\n[[step]]\nname = \"c\"\nkind = \"cold\"\n",
            "colour",
        ),
        (
            "[campaign]\nname = \"x\"\n[[step]]\nname = \"c\"\nkind = \"cold\"\n[[step]]\nname = \"i\"\nkind = \"interrupted\"\n",
            "kill_at",
        ),
        (
            "[campaign]\nname = \"x\"\n[[step]]\nname = \"c\"\nkind = \"cold\"\n[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"warp:0.5\"\n",
            "warp",
        ),
        (
            "[campaign]\nname = \"x\"\n[[step]]\nname = \"r\"\nkind = \"resume\"\n",
            "cold step must come first",
        ),
    ] {
        let file = campaign_file(tmp.path(), mistake);
        let out = tmp.path().join("out");
        let mut c = coordinator();
        c.arg("campaign").arg(&file).arg("--output").arg(&out);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{needle}: {}", f.stderr);
        let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "{}", f.stderr);
        assert!(errors[0].contains(needle), "{needle}: {}", f.stderr);
        assert!(!out.exists(), "{needle}: a refused campaign created its output");
        assert!(!f.stderr.contains("worker spawned"), "{needle}: something ran");
    }
    // An existing output directory is never written into.
    let file = campaign_file(tmp.path(), CAMPAIGN);
    let out = tmp.path().join("taken");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("mine.txt"), b"keep").unwrap();
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("already exists"), "{}", f.stderr);
    assert_eq!(harness::files_below(&out), ["mine.txt"]);
}
