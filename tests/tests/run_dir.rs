//! The run directory contract: fresh path only, evidence in order, nothing
//! identifying inside.

use harness::{coordinator, files_below, json, run, schema};

#[test]
fn an_existing_output_directory_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("already exists"), "{}", f.stderr);
    assert!(f.stderr.lines().filter(|l| l.starts_with("error:")).count() == 1, "{}", f.stderr);
    assert!(files_below(&out).is_empty(), "something was written into the user's directory");
    assert!(f.worker_pids().is_empty(), "workers were started for a refused run");
}

#[test]
fn an_existing_output_file_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("notes.txt");
    std::fs::write(&out, b"precious").unwrap();
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
}

#[test]
fn default_output_is_a_new_directory_under_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = coordinator();
    c.current_dir(tmp.path()).args(["--stage", "noop", "--quiet"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let runs: Vec<_> = std::fs::read_dir(tmp.path().join("runs")).unwrap().flatten().collect();
    assert_eq!(runs.len(), 1);
    let name = runs[0].file_name().to_string_lossy().into_owned();
    assert!(name.ends_with("Z-diagnostic"), "{name}");
    assert_eq!(
        files_below(&runs[0].path()),
        [
            "declaration.json",
            "environment.json",
            "plots/stages.png",
            "plots/stages.svg",
            "report.html",
            "report.json",
            "summary.md"
        ]
    );
    f.assert_no_worker_left();
}

#[test]
fn evidence_binds_together_and_names_no_path_user_or_host() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("evidence-run");
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--stage", "noop", "--stage", "write:4", "--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let decl = json(&out.join("declaration.json"));
    let report = json(&out.join("report.json"));
    let typed = harness::reports::read(&out);
    let keys: Vec<_> =
        decl["stages"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["noop", "write:4", "noop#2"]);
    for k in &keys {
        let st = harness::reports::stage(&typed, k);
        assert!(st.wall_s >= 0.0 && st.cpu_s >= 0.0 && st.peak_rss_bytes > 0, "{st:?}");
    }
    assert_eq!(typed.workers.len(), 3, "one process per stage");
    // wait4's fault and switch counts per process: a process that ran faulted.
    for w in &typed.workers {
        assert!(w.faults.minor_faults.is_some_and(|n| n > 0), "{w:?}");
        assert!(w.faults.major_faults.is_some() && w.faults.voluntary_switches.is_some(), "{w:?}");
        assert!(w.faults.involuntary_switches.is_some(), "{w:?}");
    }
    // The machine's huge-page mode, where the kernel shows it.
    let env = json(&out.join("environment.json"));
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok();
    match thp {
        Some(t) => assert!(
            t.contains(&format!("[{}]", env["transparent_hugepages"]["enabled"].as_str().unwrap()))
        ),
        None => assert!(env["transparent_hugepages"]["enabled"].is_null()),
    }
    assert_eq!(typed.artifacts[0].path, "artifacts/job-1-write.bin");
    assert_eq!(decl["program"]["source_sha256"].as_str().unwrap().len(), 64);

    // The bindings, recomputed here as docs/evidence.md describes them (not
    // through `verify`): SHA-256 of the declaration's and environment's
    // bytes, and of the report's canonical form (keys sorted, two-space
    // indentation, one trailing newline) without `body_sha256`.
    let sha = |bytes: &[u8]| -> String {
        use sha2::Digest;
        sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    };
    for (file, key) in
        [("declaration.json", "declaration_sha256"), ("environment.json", "environment_sha256")]
    {
        assert_eq!(report[key], sha(&std::fs::read(out.join(file)).unwrap()), "{key}");
    }
    let mut body = report.clone();
    let claimed = body.as_object_mut().unwrap().remove("body_sha256").unwrap();
    let canonical = format!("{}\n", serde_json::to_string_pretty(&body).unwrap());
    assert_eq!(claimed, sha(canonical.as_bytes()), "body_sha256");
    // And the file itself is that canonical form, with the digest in it.
    let file = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert_eq!(file, format!("{}\n", serde_json::to_string_pretty(&report).unwrap()));

    let host = nix::unistd::gethostname().unwrap().to_string_lossy().into_owned();
    let user = std::env::var("USER").unwrap_or_default();
    let tmp_str = tmp.path().to_string_lossy().into_owned();
    for name in ["declaration.json", "environment.json", "report.json", "summary.md"] {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(!text.contains(&tmp_str), "{name} contains the output path");
        assert!(!text.contains("evidence-run"), "{name} names the run directory");
        if host.len() > 3 {
            assert!(!text.contains(&host), "{name} names the host");
        }
        if user.len() > 3 {
            assert!(!text.contains(&format!("\"{user}\"")), "{name} names the user");
        }
    }
}

/// docs/schema/ describes a run directory's four files: a real run's
/// validate, and each of them with one planted key (at its root and inside
/// a record) does not.
#[test]
fn the_published_schema_refuses_a_planted_field() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--stage", "noop", "--stage", "write:4"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let Some(valid) = schema::validate(&out) else { return };
    assert_eq!(valid, Ok(3), "declaration, environment and report validate");

    // (file, where in it a key is planted)
    let plants: [(&str, &[&str]); 5] = [
        ("declaration.json", &[]),
        ("environment.json", &["cpu"]),
        ("report.json", &[]),
        ("report.json", &["stages", "noop"]),
        ("report.json", &["workers", "0"]),
    ];
    for (file, at) in plants {
        let copy = tmp.path().join("planted");
        let _ = std::fs::remove_dir_all(&copy);
        std::fs::create_dir(&copy).unwrap();
        let mut value = json(&out.join(file));
        let mut here = &mut value;
        for key in at {
            here = match key.parse::<usize>() {
                Ok(i) => &mut here[i],
                Err(_) => &mut here[*key],
            };
        }
        here.as_object_mut().unwrap().insert("planted".into(), 1.into());
        std::fs::write(copy.join(file), serde_json::to_vec_pretty(&value).unwrap()).unwrap();
        let failures = schema::validate(&copy).unwrap().expect_err(file);
        assert!(failures.0.contains(file), "{file} {at:?}: {failures}");
    }

    // A failed run's failure.json is described too.
    let failed = tmp.path().join("failed");
    let mut c = coordinator();
    c.arg("--output").arg(&failed).args(["--stage", "fail"]);
    let f = run(c);
    assert_ne!(f.code(), Some(0));
    assert!(failed.join("failure.json").is_file(), "{}", f.stderr);
    let mut value = json(&failed.join("failure.json"));
    value.as_object_mut().unwrap().insert("planted".into(), 1.into());
    std::fs::write(failed.join("failure.json"), serde_json::to_vec(&value).unwrap()).unwrap();
    let failures = schema::validate(&failed).unwrap().expect_err("failure.json");
    assert!(failures.0.contains("failure.json"), "{failures}");
}

#[test]
fn isolation_run_uses_one_process_for_every_stage() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--isolation", "run", "--stage", "noop", "--stage", "sleep:10", "--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let workers = &report.workers;
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].stages.len(), 3);
    assert_eq!(workers[0].exit, "exited 0");
    assert_eq!(f.worker_pids().len(), 1);
    f.assert_no_worker_left();
}

#[test]
fn several_workers_share_the_queue() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--workers", "3"]);
    for _ in 0..6 {
        c.args(["--stage", "sleep:100"]);
    }
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(harness::reports::read(&out).stages.len(), 6);
    // Concurrency from the order of events, not from timing: the most
    // workers alive at once (spawned and not yet ended) must reach three.
    let mut alive = 0i32;
    let mut most = 0i32;
    for line in f.stderr.lines() {
        if line.contains("worker spawned") {
            alive += 1;
            most = most.max(alive);
        } else if line.contains("worker ended") {
            alive -= 1;
        }
    }
    assert_eq!(most, 3, "{}", f.stderr);
    assert_eq!(f.worker_pids().len(), 6, "a fresh process per stage");
    f.assert_no_worker_left();
}

/// `coordinator doctor` prints the machine's state without running
/// anything, and exits 1 when a warning applies; a run records the same
/// warnings in its report and summary.
#[test]
fn doctor_and_runs_warn_about_the_machine_as_pyperf_does() {
    let mut c = coordinator();
    c.args(["doctor", "--workers", "1024"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}{}", f.stdout, f.stderr);
    assert!(f.stdout.starts_with("cpu: "), "{}", f.stdout);
    assert!(f.stdout.contains("transparent huge pages"), "{}", f.stdout);
    assert!(f.stdout.contains("this directory's file system: "), "{}", f.stdout);
    assert!(f.stdout.contains("warning: 1024 workers on"), "{}", f.stdout);
    assert!(f.worker_pids().is_empty(), "doctor started a worker");

    let cores = std::thread::available_parallelism().unwrap().get() as u32;
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--stage", "noop", "--workers"]).arg((cores + 1).to_string());
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let warned = harness::reports::read(&out).machine_warnings;
    let says = format!("{} workers on {cores} cores", cores + 1);
    assert!(warned.iter().any(|w| w.starts_with(&says)), "{warned:?}");
    assert!(f.stderr.contains(&format!("warning: {says}")), "{}", f.stderr);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("## The machine"), "{summary}");
    let env = json(&out.join("environment.json"));
    assert!(env["cpu"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(env["aslr"].is_u64() || env["unknown"].is_object(), "{env}");
    let fs = &env["output_filesystem"];
    assert!(fs["kind"].as_str().is_some_and(|k| !k.is_empty() && !k.contains('/')), "{env}");
    assert!(fs["journal"].is_boolean() || fs["journal"].is_null(), "{env}");
}
