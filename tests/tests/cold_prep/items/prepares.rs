//! A team's program prepares: serial against N processes with identical
//! outputs, its spans, a phase with fewer processes than asked, the worked
//! example.

use super::*;

#[test]
fn a_teams_program_prepares_serial_and_parallel_with_identical_outputs() {
    let p = prepare("ok", &["--workers", "2", "--rounds", "2"], &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    p.assert_nothing_left();
    let report = harness::reports::read(&p.out);
    let r = harness::reports::cold_prep(&report);
    assert_eq!(r.outputs_identical, Some(true));
    assert!(r.caches_identical.is_none(), "the recipe's caches are not this run's");
    let items = r.items.as_ref().expect("the items' summary");
    assert_eq!(items.count, 6);
    assert!(items.weighted);
    // The control of the fewer-processes warning: 6 items, 2 processes.
    let warnings = r.warnings.join("\n");
    assert!(!warnings.contains("the parallel phase had"), "{warnings}");
    let file = std::fs::read(p.out.parent().unwrap().join("items.tsv")).unwrap();
    assert_eq!(items.items_sha256, evidence::sha256_hex(&file));
    // Each process started the program once, and its start-up is its own.
    let sides = [("serial", &r.serial), ("parallel", &r.parallel)];
    for (side, prep) in sides {
        let workers = &prep.workers;
        assert_eq!(workers.len(), if side == "serial" { 1 } else { 2 });
        for w in workers {
            assert!(w.startup_s.is_some_and(|s| s > 0.0), "{w:?}");
        }
        assert_eq!(prep.per_series_s.n, 6, "one time per item");
        assert!(prep.components_s["span:work_s"] > 0.0);
    }
    let stage = harness::reports::stage(&report, "cold_prepare_parallel");
    assert_eq!(stage.stage, "prepare_item");
    assert_eq!(harness::reports::figure(stage, "items"), 6.0);
    // Where per-item time went is the program's own spans, nothing else it
    // reported (its setup).
    for (side, prep) in sides {
        let parts = &prep.components_s;
        assert!(parts.keys().all(|k| k.starts_with("span:")), "{side}: {parts:?}");
    }
    // Each program's tree had a cgroup where one can be made: the phase's
    // peak is then the kernel's.
    let method = if harness::cgroups_here() { "cgroup" } else { "sampled" };
    assert_eq!(stage.tree_peak_method, method, "{stage:?}");
    // The phase's page faults and switches are its processes' (wait4), added.
    let processes: Vec<_> =
        report.workers.iter().filter(|w| w.phase == "cold_prepare_parallel").collect();
    assert_eq!(processes.len(), 2);
    let counts = [
        (
            "minor_faults",
            stage.faults.minor_faults,
            processes.iter().map(|w| w.faults.minor_faults).sum(),
        ),
        (
            "major_faults",
            stage.faults.major_faults,
            processes.iter().map(|w| w.faults.major_faults).sum(),
        ),
        (
            "voluntary_switches",
            stage.faults.voluntary_switches,
            processes.iter().map(|w| w.faults.voluntary_switches).sum(),
        ),
        (
            "involuntary_switches",
            stage.faults.involuntary_switches,
            processes.iter().map(|w| w.faults.involuntary_switches).sum(),
        ),
    ];
    for (key, phase, sum) in counts {
        let sum: Option<u64> = sum;
        assert!(sum.is_some(), "{key}: a process without it");
        assert_eq!(phase, sum, "{key}: {stage:?}");
    }
    // Both phases wrote every item's file; the manifests bind them.
    for dir in ["private-output", "private-output-parallel"] {
        for id in IDS {
            let text = std::fs::read_to_string(p.out.join(dir).join(format!("{id}.txt"))).unwrap();
            assert_eq!(text, id.repeat(3));
        }
        let m = json(&p.out.join(dir).join("manifest.json"));
        assert_eq!(m["schema"], "stagebench.output-manifest");
        assert_eq!(m["files"].as_object().unwrap().len(), 6);
    }
    // No id in any evidence file, summary or plot.
    for f in harness::files_below(&p.out) {
        if f.starts_with("private-output") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(p.out.join(&f)).unwrap()).into_owned();
        for id in IDS {
            assert!(!text.contains(id), "{f} names item {id}");
        }
    }
    let mut v = harness::coordinator();
    v.arg("verify").arg(&p.out);
    let verified = run(v);
    assert_eq!(verified.code(), Some(0), "{}", verified.stderr);
    // summary.md says whose preparation it was and how items were handed out.
    let summary = std::fs::read_to_string(p.out.join("summary.md")).unwrap();
    let sha = &items.items_sha256;
    let said = format!(
        "A team's own preparation program over 6 items (items file SHA-256 {}…), handed out largest weight first",
        &sha[..12]
    );
    assert!(summary.contains(&said), "{said:?} not in {summary}");
    assert!(summary.contains("Start-up (spawn to ready) median "), "{summary}");
    // What the console says.
    assert!(p.f.stdout.contains("items 6; serial "), "{}", p.f.stdout);
    assert!(p.f.stdout.contains("outputs identical: true"), "{}", p.f.stdout);
}

/// `--span` reaches a preparation program too: a function it calls per
/// item is timed per item, and a target it never imports is named.
#[test]
fn spans_named_on_the_command_line_time_a_preparation_program() {
    let args =
        ["--workers", "2", "--rounds", "1", "--span", "posixpath:join", "--span", "nowhere:f"];
    let p = prepare("ok", &args, &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    p.assert_nothing_left();
    let report = harness::reports::read(&p.out);
    let r = harness::reports::cold_prep(&report);
    for (side, prep) in [("serial", &r.serial), ("parallel", &r.parallel)] {
        let s = prep.components_s.get("span:join_s");
        assert!(s.is_some_and(|s| *s > 0.0), "{side}: {:?}", prep.components_s);
    }
    let stage = harness::reports::stage(&report, "cold_prepare_parallel");
    assert_eq!(stage.spans_not_found, ["nowhere:f"], "{stage:?}");
    harness::reports::figure(stage, "span:join_s");
}

/// `--span __main__:prep` on a program that hands `prep` to
/// `stagebench.serve` (the documented pattern: the reference is taken on
/// the line that starts serving, before the span could be wrapped) counts
/// every item's call, not the first (issue 63: it counted 1 of 4).
#[test]
fn a_function_handed_to_serve_is_counted_on_every_item() {
    let (tmp, out, mut c) = coordinator_with_output();
    let items = tmp.path().join("items");
    std::fs::write(&items, "a\nb\nc\nd\n").unwrap();
    let program = tmp.path().join("prep.py");
    std::fs::write(
        &program,
        "import os, time, stagebench\n\ndef prep(item, out):\n    time.sleep(0.002)\n    \
         open(os.path.join(out, item), 'w').write(item)\n\nstagebench.serve(prep)\n",
    )
    .unwrap();
    let py = python(&mut c);
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--span", "__main__:prep"]);
    c.arg("--prepare").arg(format!("{py} {}", program.display())).arg("--items").arg(&items);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    for phase in ["cold_prepare", "cold_prepare_parallel"] {
        let stage = harness::reports::stage(&report, phase);
        assert_eq!(stage.spans["prep"].calls, 4, "{phase}: {:?}", stage.spans);
        assert!(stage.span_warnings.is_empty(), "{phase}: {:?}", stage.span_warnings);
    }
}

/// One item for two workers (issue 44): one process starts, and the
/// speedup is said to compare two 1-process runs, its efficiency over 1,
/// not "efficiency 113%" of two workers.
#[test]
fn fewer_processes_than_asked_are_said_with_the_speedup() {
    let (tmp, out, mut c) = coordinator_with_output();
    let items = tmp.path().join("items");
    std::fs::write(&items, "only\n").unwrap();
    let py = python(&mut c);
    let program = repo().join("tests/scripts/item_program.py");
    c.env("ITEM_MODE", "ok").args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1"]);
    c.arg("--prepare").arg(format!("{py} {}", program.display())).arg("--items").arg(&items);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let warnings = harness::reports::cold_prep(&report).warnings.join("\n");
    assert!(
        warnings.contains("the parallel phase had 1 process(es), not the 2 asked for")
            && warnings.contains("compares two 1-process runs"),
        "{warnings}"
    );
}

/// The worked example (examples/prepare/): the recipe's features in numpy,
/// served per series, identical serial and parallel, and equal to the
/// built-in cache within the contract's float tolerance. It needs numpy and
/// pyarrow: CI's `STAGEBENCH_PYTHON` has them (the test is then required);
/// elsewhere, without them, it says SKIPPED.
#[test]
fn the_worked_example_prepares_what_the_recipe_prepares() {
    let mut probe = Command::new("true");
    let py = python(&mut probe);
    let has = Command::new(&py)
        .args(["-c", "import numpy, pyarrow"])
        .envs(probe.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(
            std::env::var("STAGEBENCH_PYTHON").is_err(),
            "STAGEBENCH_PYTHON ({py}) lacks numpy or pyarrow: the example cannot run"
        );
        let why = format!("{py} has no numpy or pyarrow");
        harness::skip("the_worked_example_prepares_what_the_recipe_prepares", &why);
        return;
    }
    let data = &harness::data::tiny().frozen;
    let example = repo().join("examples/prepare");
    let (tmp, out, mut c) = coordinator_with_output();
    python(&mut c);
    let list = Command::new(&py)
        .arg(example.join("prepare.py"))
        .arg("--list")
        .arg(data)
        .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let items = tmp.path().join("items.tsv");
    std::fs::write(&items, &list.stdout).unwrap();
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--prepare"])
        .arg(format!("{py} {} --data {}", example.join("prepare.py").display(), data.display()))
        .arg("--items")
        .arg(&items)
        .arg("--inputs")
        .arg(data);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let r = harness::reports::cold_prep(&report);
    assert_eq!(r.outputs_identical, Some(true));
    let inputs = r.items.as_ref().and_then(|i| i.inputs.as_ref()).expect("the inputs' digest");
    assert!(inputs.unchanged);
    let spans = &r.serial.components_s;
    for name in ["read", "hash", "decode", "extract", "write"] {
        assert!(spans.contains_key(&format!("span:{name}_s")), "{spans:?}");
    }
    // The built-in preparation of the same data, and the comparison.
    let builtin = tmp.path().join("builtin");
    let mut b = harness::coordinator();
    b.args(["--mode", "cold-prep", "--workers", "1", "--rounds", "1", "--data"])
        .arg(data)
        .arg("--output")
        .arg(&builtin);
    let fb = run(b);
    assert_eq!(fb.code(), Some(0), "{}", fb.stderr);
    let mut compare = Command::new(&py);
    compare
        .arg(example.join("compare.py"))
        .arg(out.join("private-output"))
        .arg(builtin.join("private-feature-cache"));
    let cmp = compare.output().unwrap();
    let said = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.status.success(), "{said}{}", String::from_utf8_lossy(&cmp.stderr));
    assert!(said.contains("largest difference"), "{said}");
}
