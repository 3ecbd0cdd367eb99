//! Beyond a command's trials: a `--prepare` program over its whole life,
//! and a campaign's pipeline stages.

use super::{ONE_AT_A_TIME, truth};
use harness::{coordinator_with_output, py_spy_python, repo, run};
use std::path::Path;

/// A `--prepare` phase sampled: each worker's program over its whole life
/// is one sample of the shares. 40 items of `sampled_items.py` (f:g 70:30
/// per item), one round, 1 and 2 workers.
fn sampled_prepare(py: &str, sample: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (tmp, out, mut c) = coordinator_with_output();
    let items = tmp.path().join("items.txt");
    let ids: Vec<String> = (1..=40).map(|i| i.to_string()).collect();
    std::fs::write(&items, ids.join("\n") + "\n").unwrap();
    let program = repo().join("tests/scripts/sampled_items.py");
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--items"]).arg(&items);
    c.arg("--prepare").arg(format!("{py} {}", program.display()));
    if sample {
        c.args(["--sample", "200"]);
    }
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    (tmp, out)
}

#[test]
fn a_prepare_programs_shares_match_the_truth_per_worker_and_its_cpu_leaves_py_spy_out() {
    let Some(py) = py_spy_python("a_prepare_programs_shares") else { return };
    let (_tmp, out) = sampled_prepare(&py, true);
    let report = harness::json(&out.join("report.json"));
    for (stage, programs) in [("cold_prepare", 1), ("cold_prepare_parallel", 2)] {
        let x = &report["stages"][stage]["samples"];
        assert_eq!(x["trials"], programs, "{stage}: {x}");
        assert_eq!(x["programs"], true, "{stage}");
        // Each program's own share of f in f and g, against the truth.
        let share = |name: &str| -> Vec<f64> {
            let row =
                x["functions"].as_array().unwrap().iter().find(|r| {
                    r["lane"] == "main" && r["function"].as_str().unwrap().starts_with(name)
                });
            let row = row.unwrap_or_else(|| panic!("{stage}: no {name} in {x}"));
            row["inclusive"]["trials"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        };
        let (f, g) = (share("f ("), share("g ("));
        for (f, g) in f.iter().zip(&g) {
            let of = f / (f + g);
            eprintln!("{stage}: f's share of f and g {of:.3}");
            assert!(
                (of - 0.7).abs() <= 0.05,
                "{stage}: f's share of f and g is {of:.3}, the truth 0.70"
            );
        }
        assert!(x["samples"].as_f64().unwrap() >= 150.0, "{stage}: too few samples: {x}");
    }
    // One artifact per program, bound to its phase.
    let artifacts: Vec<&serde_json::Value> =
        report["artifacts"].as_array().unwrap().iter().filter(|a| a["kind"] == "samples").collect();
    let of = |stage: &str| artifacts.iter().filter(|a| a["stage"] == stage).count();
    assert_eq!((of("cold_prepare"), of("cold_prepare_parallel")), (1, 2), "{artifacts:?}");
    // The phase's CPU leaves py-spy's out; the worker processes' own
    // figures (wait4's) still hold it.
    let stages: f64 = ["cold_prepare", "cold_prepare_parallel"]
        .iter()
        .map(|s| report["stages"][s]["cpu_s"].as_f64().unwrap())
        .sum();
    let workers: f64 =
        report["workers"].as_array().unwrap().iter().map(|w| w["cpu_s"].as_f64().unwrap()).sum();
    assert!(
        workers - stages > 0.05,
        "py-spy's CPU not taken out: workers {workers} s, stages {stages} s"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains(
            "over 2 preparation program(s), one per worker process, each over its whole life"
        ),
        "{summary}"
    );

    // What the program wrote is what it writes unsampled.
    let (_tmp2, plain) = sampled_prepare(&py, false);
    let manifest = |run: &Path| std::fs::read(run.join("private-output/manifest.json")).unwrap();
    assert_eq!(manifest(&out), manifest(&plain), "the sampled program's outputs differ");
    let plain = harness::json(&plain.join("report.json"));
    assert!(plain["stages"]["cold_prepare"].get("samples").is_none_or(|s| s.is_null()));

    // A program's folded stacks changed by one byte: verify refuses the run.
    let victim = out.join(artifacts[0]["path"].as_str().unwrap());
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[0] ^= 0x01;
    std::fs::write(&victim, bytes).unwrap();
    let path = artifacts[0]["path"].as_str().unwrap();
    let v = run({
        let mut c = harness::coordinator();
        c.arg("verify").arg(&out);
        c
    });
    assert_eq!(v.code(), Some(3), "{}", v.stderr);
    assert!(v.stderr.contains(path), "{}", v.stderr);
}

#[test]
fn a_campaign_samples_its_pipeline_stages_and_a_recipe_campaign_is_refused() {
    let Some(py) = py_spy_python("a_campaign_samples") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("campaign.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"sampled\"\ntrials = 2\nsample = 200\n\n[[pipeline]]\nname = \"truth\"\nargv = [\"{py}\", \"{}\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n",
            truth()
        ),
    )
    .unwrap();
    let out = tmp.path().join("campaign");
    let mut c = harness::coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let declaration = harness::json(&out.join("declaration.json"));
    assert!(declaration["sampler"].as_str().unwrap().starts_with("py-spy "), "{declaration}");
    // Each trial's run holds its stage's samples, the forked child in its lane.
    let reports: Vec<String> =
        harness::files_below(&out).into_iter().filter(|p| p.ends_with("/report.json")).collect();
    let mut sampled = 0;
    for r in &reports {
        let report = harness::json(&out.join(r));
        if let Some(x) = report["stages"]["truth"].get("samples") {
            assert!(x["lanes"]["forked"].as_f64().unwrap() > 0.0, "{x}");
            sampled += 1;
        }
    }
    assert_eq!(sampled, 2, "runs sampled among {reports:?}");
    let v = run({
        let mut c = harness::coordinator();
        c.arg("verify").arg(&out);
        c
    });
    assert_eq!(v.code(), Some(0), "{}", v.stderr);

    // The recipe's stages are not Python: refused before anything runs.
    let recipe = tmp.path().join("recipe.toml");
    std::fs::write(
        &recipe,
        "[campaign]\nname = \"r\"\nsample = 100\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n",
    )
    .unwrap();
    let mut c = harness::coordinator();
    c.arg("campaign").arg(&recipe).arg("--output").arg(tmp.path().join("r"));
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("sample applies to a pipeline's Python stages"), "{}", f.stderr);
    assert!(!tmp.path().join("r").exists());
}

/// `coordinator gate` with `--sample` in its run flags, on a repository
/// whose head makes `f` do 10 units of work a round where base did 7
/// (`g`: 3 in both): the stage regresses, and the gate names `f` as the
/// function whose share moved, in report.json, comment.md and on the
/// console, from every run of each side pooled.
#[test]
fn a_gate_with_sample_names_the_function_whose_share_moved_in_a_regressed_stage() {
    let Some(py) = py_spy_python("a_gate_with_sample") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let git_repo = tmp.path().join("repo");
    std::fs::create_dir_all(&git_repo).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").arg("-C").arg(&git_repo).args(args).output();
        let out = out.expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["config", "user.email", "test@example.invalid"]);
    git(&["config", "user.name", "test"]);
    for units in ["7", "10"] {
        let program = format!(
            "UNIT = 100_000\nF = {units}\n\ndef f():\n    s = 0\n    for i in range(F * UNIT):\n        s += i\n    return s\n\n\
             def g():\n    s = 0\n    for i in range(3 * UNIT):\n        s += i\n    return s\n\n\
             for _ in range(10):\n    f()\n    g()\n"
        );
        std::fs::write(git_repo.join("prog.py"), program).unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", &format!("F = {units}")]);
    }
    let out = tmp.path().join("gate");
    let mut c = harness::coordinator();
    c.args(["gate", "--base", "HEAD~1", "--head", "HEAD", "--base-exact", "--repo"]).arg(&git_repo);
    c.arg("--output").arg(&out).args(["--max-rounds", "24", "--"]);
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--sample", "200"]);
    c.args(["--command", &format!("{py} prog.py")]);
    let f = run(c);
    assert_eq!(f.code(), Some(4), "{}{}", f.stdout, f.stderr);
    let report = harness::json(&out.join("report.json"));
    let sampled = &report["sampled"][0];
    assert_eq!(sampled["stage"], "command", "{report}");
    let said = sampled["sentence"].as_str().unwrap();
    let first = said.split(": `").nth(1).unwrap_or_default();
    assert!(first.starts_with("f (prog.py)` (main) self"), "{said}");
    let comment = std::fs::read_to_string(out.join("comment.md")).unwrap();
    assert!(comment.contains("Sampled functions in `command`: "), "{comment}");
    assert!(f.stdout.contains("sampled in command: "), "{}", f.stdout);
    let mut v = harness::coordinator();
    v.arg("verify").arg(&out);
    let verified = run(v);
    assert_eq!(verified.code(), Some(0), "{}", verified.stderr);
}
