//! `--span preset:keras` and stage spans on examples/keras/train.py, an
//! unmodified Keras 3 script, against the script's own clock (`--truth`):
//! with `STAGEBENCH_KERAS_PYTHON` naming a Python with Keras and a backend
//! (KERAS_BACKEND picks it; jax by default), SKIPPED otherwise. And the
//! preset on a Keras without what it hooks, which needs no Keras at all.

use harness::{coordinator_with_output, json, python, repo, run};
use serde_json::Value;

fn keras_python(test: &str) -> Option<String> {
    match std::env::var("STAGEBENCH_KERAS_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            harness::skip(test, "STAGEBENCH_KERAS_PYTHON names no Python with Keras");
            None
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n % 2 {
        1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Within 10% + 1 ms of the truth, as the issue asks.
fn agrees(what: &str, got: f64, truth: f64) {
    assert!(
        (got - truth).abs() <= 0.10 * truth.abs() + 0.001,
        "{what}: stagebench {got}, the script's own clock {truth}"
    );
}

/// One diagnostic run of the example (one process: what its `--truth`
/// file says is that very run's), with the preset, the five stages and a
/// resident reference; the report and the truth.
fn example(py: &str, args: &str) -> (Value, Value, harness::Finished) {
    let (tmp, out, mut c) = coordinator_with_output();
    let truth = tmp.path().join("truth.json");
    let script = repo().join("examples/keras/train.py");
    c.args(["--name", "train", "--command"])
        .arg(format!("'{py}' '{}' {args} --truth '{}'", script.display(), truth.display()))
        .args(["--span", "preset:keras", "--keras-resident", "10"]);
    for stage in ["prepare", "build", "loader", "fit", "evaluate"] {
        c.args(["--span", &format!("__main__:{stage}:stage")]);
    }
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    (json(&out.join("report.json")), json(&truth), f)
}

#[test]
fn the_keras_preset_agrees_with_the_scripts_own_clock_and_grades_both_variants() {
    let Some(py) =
        keras_python("the_keras_preset_agrees_with_the_scripts_own_clock_and_grades_both_variants")
    else {
        return;
    };
    let small = "--windows 1024 --epochs 2";
    let (r, truth, f) = example(&py, &format!("{small} --loader-work 3"));
    let stage = &r["stages"]["train"];
    let spans = &stage["spans"];
    let secs =
        |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>();
    // Every batch the loader made, and its median, as the script timed it.
    let produce = secs(&truth["produce"]);
    assert_eq!(spans["loader_produce"]["calls"].as_f64().unwrap() as usize, produce.len());
    agrees(
        "loader_produce median",
        spans["loader_produce"]["median_s"].as_f64().unwrap(),
        median(&produce),
    );
    // Every step: the first apart (trace and compile), the rest by median.
    let steps = secs(&truth["steps"]);
    let calls = spans["train_step"]["calls"].as_f64().unwrap() as usize;
    assert_eq!(spans["first_step"]["calls"], 1);
    assert_eq!(calls + 1, steps.len());
    agrees("first_step", spans["first_step"]["first_s"].as_f64().unwrap(), steps[0]);
    agrees(
        "train_step median",
        spans["train_step"]["median_s"].as_f64().unwrap(),
        median(&steps[1..]),
    );
    // Each stage's wall, CPU and peak RSS as the script's own getrusage
    // around it saw them (the stage's peak since its start against the
    // lifetime peak the script reads: stages whose memory only grows).
    let rows = stage["command_stages"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["before_stages", "prepare", "build", "loader", "fit", "evaluate"]);
    for row in &rows[1..] {
        let name = row["name"].as_str().unwrap();
        let own = &truth["stages"][name];
        let wall = own["wall_s"].as_f64().unwrap();
        agrees(&format!("{name} wall"), row["wall_s"].as_f64().unwrap(), wall);
        let cpu = row["user_s"].as_f64().unwrap() + row["sys_s"].as_f64().unwrap();
        // getrusage counts in ticks of the scheduler: 10% or 20 ms.
        let own_cpu = own["cpu_s"].as_f64().unwrap();
        assert!(
            (cpu - own_cpu).abs() <= (0.10 * own_cpu).max(0.02),
            "{name} cpu {cpu} against {own_cpu}"
        );
        if row["peak_reset"] == true && ["fit", "evaluate"].contains(&name) {
            let peak = row["peak_rss_bytes"].as_f64().unwrap();
            let own_peak = own["maxrss_bytes"].as_f64().unwrap();
            assert!(
                (peak - own_peak).abs() <= 0.10 * own_peak,
                "{name} peak {peak} against {own_peak}"
            );
        }
    }
    // Provenance: Keras among the libraries, the backend's devices.
    let runtime = &stage["runtime"];
    assert!(runtime["distributions"].get("keras").is_some(), "{runtime}");
    let backend = std::env::var("KERAS_BACKEND").unwrap_or_else(|_| "jax".into());
    let devices = runtime["devices"].as_array().unwrap();
    assert!(
        devices.iter().any(|d| d.as_str().unwrap().starts_with(&format!("{backend}:"))),
        "{runtime}"
    );
    assert_eq!(
        runtime["sources"].as_object().map(|s| s.len()),
        None,
        "the example lies outside the working directory"
    );
    // The slow loader is highly input-bound, said as such.
    let fraction = |r: &Value| r["stages"]["train"]["figures"]["input_wait_fraction"].as_f64();
    let slow = fraction(&r).expect("a verdict");
    assert!(slow >= 0.20, "a loader that takes longer than a step: {slow}");
    assert!(f.stdout.contains("highly input-bound"), "{}", f.stdout);
    assert!(f.stdout.contains("stages inside train"), "{}", f.stdout);
    // The control, with no loader work, is not.
    // A wide model (steps of about 30 ms) beside a loader that only copies.
    let (control, _, f) = example(&py, &format!("{small} --loader-work 0 --width 256"));
    let fed = fraction(&control).expect("a verdict");
    assert!(fed < 0.05, "a loader with no work: {fed}");
    assert!(f.stdout.contains("not input-bound"), "{}", f.stdout);
    // The resident reference ran at exit, with the first apart.
    let resident = &control["stages"]["train"]["spans"]["resident_step"];
    assert_eq!(resident["calls"], 10, "{resident}");
}

/// A loader of worker processes (`use_multiprocessing=True`) finishes, its
/// batches are counted wherever they were made, and no process is left.
#[test]
fn a_multiprocessing_loader_finishes_and_leaves_no_process() {
    let Some(py) = keras_python("a_multiprocessing_loader_finishes_and_leaves_no_process") else {
        return;
    };
    let (r, truth, _) = example(&py, "--windows 512 --epochs 1 --workers 2 --multiprocessing");
    let spans = &r["stages"]["train"]["spans"];
    assert!(spans["train_step"]["calls"].as_u64().unwrap() > 0, "{spans}");
    // Batches made in the pool's processes are beside the main thread.
    let made = spans["loader_produce"]["calls"].as_u64().unwrap();
    assert!(made >= 16, "16 batches of fit and as many of evaluate, some made ahead: {made}");
    assert!(spans["loader_produce"]["concurrent_s"].as_f64().unwrap() > 0.0, "{spans}");
    // The script's own clock saw only its main process's batches.
    assert!(truth["steps"].as_array().unwrap().len() == 16);
}

/// A Keras without what the preset hooks (here a stand-in `keras` package
/// whose trainer has no `make_train_function`): one warning naming it, and
/// the verdict unknown, never 0%.
#[test]
fn a_keras_without_the_hooked_attribute_gives_one_warning_and_no_verdict() {
    let (tmp, out, mut c) = coordinator_with_output();
    let py = python(&mut c);
    let fake = tmp.path().join("fake");
    let trainer = fake.join("keras/src/backend/jax");
    std::fs::create_dir_all(&trainer).unwrap();
    for d in ["keras", "keras/src", "keras/src/backend", "keras/src/backend/jax"] {
        std::fs::write(fake.join(d).join("__init__.py"), "").unwrap();
    }
    std::fs::write(
        trainer.join("trainer.py"),
        "class JAXTrainer:\n    def fit(self):\n        return 1\n",
    )
    .unwrap();
    let script = tmp.path().join("fit.py");
    std::fs::write(
        &script,
        "from keras.src.backend.jax.trainer import JAXTrainer\nJAXTrainer().fit()\n",
    )
    .unwrap();
    let path = match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", fake.display()),
        _ => fake.display().to_string(),
    };
    let path = match c.get_envs().find(|(k, _)| *k == "PYTHONPATH").and_then(|(_, v)| v) {
        Some(helper) => format!("{}:{}", fake.display(), helper.to_string_lossy()),
        None => path,
    };
    c.env("PYTHONPATH", path)
        .args(["--name", "fit", "--command"])
        .arg(format!("'{py}' '{}'", script.display()))
        .args(["--span", "preset:keras"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let r = json(&out.join("report.json"));
    let stage = &r["stages"]["fit"];
    let warnings: Vec<&str> =
        stage["span_warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    let refused: Vec<&&str> =
        warnings.iter().filter(|w| w.contains("no trainer with make_train_function")).collect();
    assert_eq!(refused.len(), 1, "{warnings:?}");
    assert!(
        warnings.iter().any(|w| w.starts_with("input-bound: unknown, because")),
        "{warnings:?}"
    );
    assert!(stage["figures"].get("input_wait_fraction").is_none(), "{stage}");
    assert!(f.stdout.contains("input-bound: unknown, because"), "{}", f.stdout);
    assert!(!f.stdout.contains("% of its step time"), "{}", f.stdout);
}
