//! `--prepare CMD --items FILE`: a team's own per-item program in the main
//! job, through real processes (tests/scripts/item_program.py, which
//! misbehaves as `ITEM_MODE` says). Every ending is checked for processes
//! left behind: the workers, and every program process (each writes its pid
//! into a directory of the test's).

use harness::{alive, coordinator_with_output, json, python, repo, run};
use std::path::PathBuf;
use std::process::Command;

/// Ids that must never reach evidence.
const IDS: [&str; 6] = ["secret-a", "secret-b", "secret-c", "secret-d", "secret-e", "secret-f"];

struct Prepared {
    _tmp: tempfile::TempDir,
    out: PathBuf,
    pids: PathBuf,
    f: harness::Finished,
}

impl Prepared {
    /// No worker and no program process outlived the run.
    fn assert_nothing_left(&self) {
        self.f.assert_no_worker_left();
        let pids: Vec<i32> = std::fs::read_dir(&self.pids)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().parse().unwrap())
            .collect();
        for pid in pids {
            assert!(!alive(pid), "program pid {pid} outlived the run\n{}", self.f.stderr);
        }
    }

    /// The run failed with `reason`, left no report, and said `says`.
    fn assert_failed(&self, reason: &str, says: &str) -> serde_json::Value {
        assert_eq!(self.f.code(), Some(1), "{}", self.f.stderr);
        assert!(!self.out.join("report.json").exists(), "a failed run has no report");
        let failure = json(&self.out.join("failure.json"));
        assert_eq!(failure["reason"], reason, "{failure}");
        let message = failure["message"].as_str().unwrap();
        assert!(message.contains(says), "failure.json says {message:?}, not {says:?}");
        for id in IDS {
            assert!(!failure.to_string().contains(id), "failure.json names an item: {failure}");
        }
        // The outputs of a failed run are never trusted: none is left.
        for dir in ["private-output", "private-output-parallel"] {
            assert!(!self.out.join(dir).exists(), "{dir} was left beside failure.json");
        }
        self.assert_nothing_left();
        failure
    }
}

/// `--mode cold-prep --prepare 'PY item_program.py' --items FILE` with
/// `ITEM_MODE=mode`, weighted items, and `args`.
fn prepare(mode: &str, args: &[&str], env: &[(&str, &str)]) -> Prepared {
    let (tmp, out, mut c) = coordinator_with_output();
    let items = tmp.path().join("items.tsv");
    let lines: Vec<String> =
        IDS.iter().enumerate().map(|(i, id)| format!("{id}\t{}", 10 + i % 3)).collect();
    std::fs::write(&items, lines.join("\n") + "\n").unwrap();
    let pids = tmp.path().join("pids");
    std::fs::create_dir(&pids).unwrap();
    let py = python(&mut c);
    let program = repo().join("tests/scripts/item_program.py");
    c.env("ITEM_MODE", mode).env("ITEM_PIDS", &pids);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(["--mode", "cold-prep", "--prepare"])
        .arg(format!("{py} {}", program.display()))
        .arg("--items")
        .arg(&items)
        .args(args);
    let f = run(c);
    Prepared { _tmp: tmp, out, pids, f }
}

#[test]
fn a_teams_program_prepares_serial_and_parallel_with_identical_outputs() {
    let p = prepare("ok", &["--workers", "2", "--rounds", "2"], &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    p.assert_nothing_left();
    let r = json(&p.out.join("report.json"));
    assert_eq!(r["outputs_identical"], true);
    assert!(r.get("caches_identical").is_none(), "the recipe's caches are not this run's");
    assert_eq!(r["items"]["count"], 6);
    assert_eq!(r["items"]["weighted"], true);
    let file = std::fs::read(p.out.parent().unwrap().join("items.tsv")).unwrap();
    assert_eq!(r["items"]["items_sha256"], evidence::sha256_hex(&file));
    // Each process started the program once, and its start-up is its own.
    for side in ["serial", "parallel"] {
        let workers = r[side]["workers"].as_array().unwrap();
        assert_eq!(workers.len(), if side == "serial" { 1 } else { 2 });
        for w in workers {
            assert!(w["startup_s"].as_f64().unwrap() > 0.0, "{w}");
        }
        assert_eq!(r[side]["per_series_s"]["n"], 6, "one time per item");
        assert!(r[side]["components_s"]["span:work_s"].as_f64().unwrap() > 0.0);
    }
    let stage = &r["stages"]["cold_prepare_parallel"];
    assert_eq!(stage["stage"], "prepare_item");
    assert_eq!(stage["figures"]["items"], 6.0);
    // Where per-item time went is the program's own spans, nothing else it
    // reported (its setup).
    for side in ["serial", "parallel"] {
        let parts = r[side]["components_s"].as_object().unwrap();
        assert!(parts.keys().all(|k| k.starts_with("span:")), "{side}: {parts:?}");
    }
    // Each program's tree had a cgroup where one can be made: the phase's
    // peak is then the kernel's.
    let method = if harness::cgroups_here() { "cgroup" } else { "sampled" };
    assert_eq!(stage["tree_peak_method"], method, "{stage}");
    // The phase's page faults and switches are its processes' (wait4), added.
    let processes: Vec<&serde_json::Value> = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["phase"] == "cold_prepare_parallel")
        .collect();
    assert_eq!(processes.len(), 2);
    for key in ["minor_faults", "major_faults", "voluntary_switches", "involuntary_switches"] {
        let sum: u64 = processes.iter().map(|w| w[key].as_u64().unwrap()).sum();
        assert_eq!(stage[key].as_u64(), Some(sum), "{key}: {stage}");
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
    let sha = r["items"]["items_sha256"].as_str().unwrap();
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
    let r = json(&p.out.join("report.json"));
    for side in ["serial", "parallel"] {
        let s = r[side]["components_s"]["span:join_s"].as_f64();
        assert!(s.is_some_and(|s| s > 0.0), "{side}: {}", r[side]["components_s"]);
    }
    let stage = &r["stages"]["cold_prepare_parallel"];
    assert_eq!(stage["spans_not_found"], serde_json::json!(["nowhere:f"]), "{stage}");
    assert!(stage["figures"]["span:join_s"].as_f64().is_some(), "{stage}");
}

#[test]
fn a_nondeterministic_program_fails_the_run_with_the_count_of_differing_files() {
    let p = prepare("clock", &["--workers", "2", "--rounds", "1"], &[("ITEM_SPECIAL", "secret-c")]);
    let failure = p.assert_failed(
        "outputs_differ",
        "the 1-process and 2-process outputs differ (private-output and private-output-parallel): 1 file(s) differ, 0 missing, 0 extra",
    );
    assert_eq!(failure["stage"], "cold_prepare_parallel");
    // The path goes to the person, on stderr only.
    assert!(p.f.stderr.contains("differs: time.txt"), "{}", p.f.stderr);
    // The control: the same program without the clock file is identical.
    let p = prepare("clock", &["--workers", "2", "--rounds", "1"], &[("ITEM_SPECIAL", "none")]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    assert_eq!(json(&p.out.join("report.json"))["outputs_identical"], true);
}

/// A run that ends ok verifies (issue 44): a program that writes beside
/// its output directory (into the run directory), or leaves an empty
/// directory in its output, fails the run (`unaccounted_output`, exit 1)
/// before any report says ok, and what it wrote is kept, named in
/// failure.json's `kept`, which `verify` accounts for.
#[test]
fn a_program_that_writes_what_no_manifest_holds_fails_the_run_and_its_files_are_kept() {
    let one = ["--workers", "2", "--rounds", "1"];
    for (mode, says, kept) in [
        ("stray", "stray.txt is not bound by report.json", vec!["stray.txt"]),
        (
            "empty_dir",
            "private-output/empty/ is an empty directory",
            vec!["private-output/empty", "private-output-parallel/empty"],
        ),
    ] {
        let p = prepare(mode, &one, &[]);
        assert_eq!(p.f.code(), Some(1), "{mode}: {}", p.f.stderr);
        assert!(!p.out.join("report.json").exists(), "{mode}: no report says ok");
        let failure = json(&p.out.join("failure.json"));
        assert_eq!(failure["reason"], "unaccounted_output", "{failure}");
        let message = failure["message"].as_str().unwrap();
        assert!(message.starts_with(says), "{mode}: {message}");
        assert!(message.contains("kept, not deleted"), "{message}");
        let listed: Vec<&str> =
            failure["kept"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(listed, kept, "{mode}");
        for k in &kept {
            assert!(p.out.join(k).exists(), "{mode}: {k} was deleted");
        }
        assert!(
            !p.out.join("private-output/secret-a.txt").exists(),
            "the run's own outputs are cleared"
        );
        p.assert_nothing_left();
        let mut v = harness::coordinator();
        v.arg("verify").arg(&p.out);
        let v = run(v);
        assert_eq!(v.code(), Some(3), "{}", v.stderr);
        assert!(v.stderr.contains("the run failed (unaccounted_output: "), "{}", v.stderr);
    }
    // The control: the same program without the stray verifies.
    let p = prepare("ok", &one, &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let mut v = harness::coordinator();
    v.arg("verify").arg(&p.out);
    assert_eq!(run(v).code(), Some(0));
}

#[test]
fn a_program_that_breaks_the_protocol_fails_the_run_and_leaves_nothing() {
    let one = ["--workers", "1", "--rounds", "1"];
    let p = prepare("before_ready", &one, &[]);
    p.assert_failed("stage_failed", "the preparation program stopped before it said ready: ");
    assert!(p.f.stderr.contains("(it exited with status 4)"), "{}", p.f.stderr);
    let p =
        prepare("never_ready", &["--workers", "1", "--rounds", "1", "--connect-timeout", "1"], &[]);
    p.assert_failed(
        "stage_failed",
        "item 3 of 6: the preparation program did not say it was ready within --connect-timeout (1.0 s)",
    );
    let p = prepare("wrong_id", &one, &[]);
    p.assert_failed("stage_failed", "answered done for an item it was not given");
    let p = prepare("malformed", &one, &[]);
    p.assert_failed("stage_failed", "wrote a malformed answer line");
    let p = prepare("crash", &one, &[]);
    // Weights 10, 11, 12, 10, 11, 12: the second item handed over is line 6.
    let says =
        "item 6 of 6: the preparation program exited before answering (it exited with status 3)";
    p.assert_failed("stage_failed", says);
    let p =
        prepare("stubborn", &["--workers", "1", "--rounds", "1", "--connect-timeout", "1"], &[]);
    p.assert_failed("stage_failed", "did not exit within 1.0 s after its input closed");
    let p = prepare("extra_done", &one, &[]);
    p.assert_failed("stage_failed", "wrote an answer line after its last item");
}

/// An item that never answers (issue 44): a program that hangs on one, or
/// closes its answers and stays alive, hung the run forever. With
/// `--item-timeout` the run fails naming the item's position, the worker
/// and the time; `--stage-timeout` counts over the whole phase of items
/// and names the item in flight. Nothing is left running.
#[test]
fn an_item_that_never_answers_fails_the_run_in_its_time() {
    let one = ["--workers", "1", "--rounds", "1"];
    // Handed out largest weight first: secret-c (line 3, weight 12) first.
    let hang = [("ITEM_SPECIAL", "secret-c")];
    let p = prepare("hang", &[&one[..], &["--item-timeout", "1"]].concat(), &hang);
    let failure = p.assert_failed(
        "item_timeout",
        "item 3 of 6 of stage cold_prepare on worker 0 took longer than --item-timeout 1.0 s",
    );
    assert_eq!(json(&p.out.join("declaration.json"))["parameters"]["item_timeout_s"], 1.0);
    assert_eq!(failure["stage"], "cold_prepare");
    let p = prepare("close_answers", &[&one[..], &["--item-timeout", "1"]].concat(), &[]);
    p.assert_failed("item_timeout", "took longer than --item-timeout 1.0 s");
    let p = prepare("hang", &[&one[..], &["--stage-timeout", "2"]].concat(), &hang);
    p.assert_failed("stage_timeout", "exceeded the stage timeout of 2.0 s (item 3 of 6 in flight)");
    // Two processes, each stuck on its first item: both are named.
    let two = ["--workers", "2", "--rounds", "1", "--stage-timeout", "3"];
    let p = prepare("hang_parallel", &two, &[]);
    let failure = p.assert_failed("stage_timeout", "exceeded the stage timeout of 3.0 s (item ");
    let message = failure["message"].as_str().unwrap();
    assert!(message.contains("; also in flight: item "), "{message}");
    assert!(message.contains("item 3 of 6") && message.contains("item 6 of 6"), "{message}");
    // The control: a program that answers every item within the time passes.
    let p = prepare("ok", &[&one[..], &["--item-timeout", "30"]].concat(), &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
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
    let r = json(&out.join("report.json"));
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("the parallel phase had 1 process(es), not the 2 asked for")
            && warnings.contains("compares two 1-process runs"),
        "{warnings}"
    );
}

#[test]
fn an_item_that_fails_is_named_by_its_line_never_its_id() {
    // secret-e is line 5 of 6.
    let p = prepare("error", &["--workers", "2", "--rounds", "1"], &[("ITEM_SPECIAL", "secret-e")]);
    p.assert_failed("stage_failed", "item 5 of 6: the preparation program answered error");
    // Its own message reaches the person on stderr.
    assert!(p.f.stderr.contains("ValueError: cannot prepare secret-e"), "{}", p.f.stderr);
}

#[test]
fn inputs_that_change_during_the_run_fail_it() {
    let inputs = tempfile::tempdir().unwrap();
    std::fs::write(inputs.path().join("data.bin"), b"input").unwrap();
    let dir = inputs.path().to_str().unwrap();
    let args = ["--workers", "2", "--rounds", "1", "--inputs", dir];
    let p = prepare("touch_inputs", &args, &[("ITEM_INPUTS", dir)]);
    p.assert_failed(
        "inputs_changed",
        "--inputs changed during the run: 1 file(s), 5 bytes before; 2 file(s), 6 bytes after",
    );
    // The control: inputs left alone are declared and reported unchanged.
    std::fs::remove_file(inputs.path().join("touched")).unwrap();
    let p = prepare("ok", &args, &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let r = json(&p.out.join("report.json"));
    assert_eq!(r["items"]["inputs"]["files"], 1);
    assert_eq!(r["items"]["inputs"]["unchanged"], true);
    let d = json(&p.out.join("declaration.json"));
    assert_eq!(d["parameters"]["inputs_sha256"], r["items"]["inputs"]["sha256"]);
}

#[test]
fn a_process_the_program_left_running_is_a_leak_and_is_killed() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("sleep.pid");
    let env = [("ITEM_LEAK_PID_FILE", pid_file.to_str().unwrap())];
    let p = prepare("leak", &["--workers", "1", "--rounds", "1"], &env);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let r = json(&p.out.join("report.json"));
    let leaked = &r["stages"]["cold_prepare"]["leaked_processes"];
    assert_eq!(leaked["count"], 1, "{leaked}");
    assert_eq!(leaked["names"][0], "sleep");
    p.assert_nothing_left();
    // This run's own sleep, by its pid (another run's, on a shared machine,
    // may be alive).
    let sleeper: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(
        harness::wait_gone(sleeper, std::time::Duration::from_secs(10)),
        "the leaked sleep {sleeper} is still running"
    );
    // With --leaks fail the same program fails the run.
    let p = prepare("leak", &["--workers", "1", "--rounds", "1", "--leaks", "fail"], &[]);
    p.assert_failed("leaked_processes", "sleep");
}

#[test]
fn bad_items_files_and_flags_are_refused_before_anything_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let refused = |items: &[u8], extra: &[&str], says: &str| {
        let file = tmp.path().join("items");
        std::fs::write(&file, items).unwrap();
        let mut c = harness::coordinator();
        c.args(["--mode", "cold-prep", "--prepare", "true", "--items"])
            .arg(&file)
            .arg("--output")
            .arg(&out)
            .args(extra);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{says}: {}", f.stderr);
        let lines: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{}", f.stderr);
        assert!(lines[0].contains(says), "{} does not say {says:?}", lines[0]);
        assert!(!lines[0].contains("secret"), "{}", lines[0]);
        assert!(!out.exists(), "a refused command line created {}", out.display());
    };
    refused(b"", &[], "--items: the file lists no item");
    refused(b"a\nsecret\nb\nsecret\n", &[], "--items line 4: the same id as line 2");
    refused(b"a\t-3\n", &[], "--items line 1: the weight is not a positive number");
    refused(b"a\t1\tx\n", &[], "--items line 1: a third field");
    refused(b"a\n", &["--data", "/nonexistent"], "--data is the recipe's dataset");
    // Ids longer than an answer can carry: refused up front, not blamed on
    // the program (100 KB) or the worker (2 MB) mid-run.
    for len in [100_000, 2_000_000] {
        let line = format!("a\n{}\n", "s".repeat(len));
        let says =
            format!("--items line 2: the id is {} bytes as a JSON string, over the", len + 2);
        refused(line.as_bytes(), &[], &says);
    }
    // A file with no end is refused before it is read (it once grew the
    // coordinator to 6.6 GB in 8 s).
    let mut c = harness::coordinator();
    c.args(["--mode", "cold-prep", "--prepare", "true", "--items", "/dev/zero", "--output"])
        .arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("--items /dev/zero: not a regular file"), "{}", f.stderr);
    assert!(!out.exists());
    let missing = tmp.path().join("no-inputs");
    let missing = missing.to_str().unwrap();
    refused(b"a\n", &["--inputs", missing], &format!("--inputs {missing}: not a directory"));
    let mut c = harness::coordinator();
    c.args(["--mode", "cold-prep", "--inputs"]).arg(tmp.path()).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("--inputs applies to --prepare"), "{}", f.stderr);
    assert!(!out.exists());
    // The recipe's own preparation is not Python: no span can be named in it.
    let mut c = harness::coordinator();
    c.args(["--mode", "cold-prep", "--span", "fitting:search_fit"]).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(
        f.stderr.contains(
            "--span fitting:search_fit applies to --command stages and --prepare programs"
        ),
        "{}",
        f.stderr
    );
    assert!(!out.exists());
    refused(b"a\n", &["--item-timeout", "0"], "'0' is not a positive number of seconds");
    let mut c = harness::coordinator();
    c.args(["--mode", "cold-prep", "--item-timeout", "5"]).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("--item-timeout applies to --prepare"), "{}", f.stderr);
    let mut c = harness::coordinator();
    c.args(["--mode", "cold-prep", "--prepare", "true"]).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("--prepare needs --items FILE"), "{}", f.stderr);
    let mut c = harness::coordinator();
    c.args(["--mode", "profile", "--items", "x"]).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("--items applies to --mode cold-prep"), "{}", f.stderr);
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
    let r = json(&out.join("report.json"));
    assert_eq!(r["outputs_identical"], true);
    assert_eq!(r["items"]["inputs"]["unchanged"], true);
    let spans = r["serial"]["components_s"].as_object().unwrap();
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
