//! `--span preset:keras` and stage spans on examples/keras/train.py, an
//! unmodified Keras 3 script, against the script's own clock (`--truth`):
//! with `STAGEBENCH_KERAS_PYTHON` naming a Python with Keras and a backend
//! (KERAS_BACKEND picks it; jax by default), SKIPPED otherwise. And the
//! preset on a Keras without what it hooks, which needs no Keras at all.

use harness::reports::{self, figure, stage};
use harness::{coordinator_with_output, json, python, repo, run};
use report::Report;
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
fn example(py: &str, args: &str) -> (Report, Value, harness::Finished) {
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
    (reports::read(&out), json(&truth), f)
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
    let train = stage(&r, "train");
    let span = |name: &str| {
        train.spans.get(name).unwrap_or_else(|| panic!("no span {name}: {:?}", train.spans.keys()))
    };
    let secs =
        |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>();
    // Every batch the loader made, and its median, as the script timed it.
    let produce = secs(&truth["produce"]);
    assert_eq!(span("loader_produce").calls as usize, produce.len());
    agrees("loader_produce median", span("loader_produce").median_s, median(&produce));
    // Every step: the first apart (trace and compile), the rest by median.
    let steps = secs(&truth["steps"]);
    let calls = span("train_step").calls as usize;
    assert_eq!(span("first_step").calls, 1);
    assert_eq!(calls + 1, steps.len());
    agrees("first_step", span("first_step").first_s, steps[0]);
    agrees("train_step median", span("train_step").median_s, median(&steps[1..]));
    // Each stage's wall, CPU and peak RSS as the script's own getrusage
    // around it saw them (the stage's peak since its start against the
    // lifetime peak the script reads: stages whose memory only grows).
    let rows = &train.command_stages;
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["before_stages", "prepare", "build", "loader", "fit", "evaluate"]);
    for row in &rows[1..] {
        let name = row.name.as_str();
        let own = &truth["stages"][name];
        let wall = own["wall_s"].as_f64().unwrap();
        agrees(&format!("{name} wall"), row.wall_s, wall);
        let cpu = row.user_s + row.sys_s;
        // getrusage counts in ticks of the scheduler: 10% or 20 ms.
        let own_cpu = own["cpu_s"].as_f64().unwrap();
        assert!(
            (cpu - own_cpu).abs() <= (0.10 * own_cpu).max(0.02),
            "{name} cpu {cpu} against {own_cpu}"
        );
        if row.peak_reset && ["fit", "evaluate"].contains(&name) {
            let peak = row.peak_rss_bytes as f64;
            let own_peak = own["maxrss_bytes"].as_f64().unwrap();
            assert!(
                (peak - own_peak).abs() <= 0.10 * own_peak,
                "{name} peak {peak} against {own_peak}"
            );
        }
    }
    // Provenance: Keras among the libraries, the backend's devices.
    let runtime = train.runtime.as_ref().expect("what the stage ran on");
    assert!(runtime.distributions.contains_key("keras"), "{runtime:?}");
    let backend = std::env::var("KERAS_BACKEND").unwrap_or_else(|_| "jax".into());
    let devices = &runtime.devices;
    assert!(devices.iter().any(|d| d.starts_with(&format!("{backend}:"))), "{runtime:?}");
    assert!(runtime.sources.is_empty(), "the example lies outside the working directory");
    // The slow loader is highly input-bound, said as such.
    let fraction = |r: &Report| figure(stage(r, "train"), "input_wait_fraction");
    let slow = fraction(&r);
    assert!(slow >= 0.20, "a loader that takes longer than a step: {slow}");
    assert!(f.stdout.contains("highly input-bound"), "{}", f.stdout);
    assert!(f.stdout.contains("stages inside train"), "{}", f.stdout);
    // The control, with no loader work, is not.
    // A wide model (steps of about 30 ms) beside a loader that only copies.
    let (control, _, f) = example(&py, &format!("{small} --loader-work 0 --width 256"));
    let fed = fraction(&control);
    // Measured (JAX, torch): under 5%. Estimated (TensorFlow): graded by
    // its interval, "not input-bound" or "not distinguishable from no
    // waiting", never moderately or highly (scripts/check-input-bound.sh
    // runs it 5 times each way).
    match stage(&control, "train").figures.contains_key("input_wait_estimated") {
        false => {
            assert!(fed < 0.05, "a loader with no work: {fed}");
            assert!(f.stdout.contains("not input-bound"), "{}", f.stdout);
        }
        true => assert!(
            f.stdout.contains("so it is not input-bound")
                || f.stdout.contains("so it is not distinguishable from no waiting"),
            "{}",
            f.stdout
        ),
    }
    // The resident reference ran at exit, with the first apart.
    let resident = &stage(&control, "train").spans["resident_step"];
    assert_eq!(resident.calls, 10, "{resident:?}");
}

/// A loader of worker processes (`use_multiprocessing=True`) finishes, its
/// batches are counted wherever they were made, and no process is left.
#[test]
fn a_multiprocessing_loader_finishes_and_leaves_no_process() {
    let Some(py) = keras_python("a_multiprocessing_loader_finishes_and_leaves_no_process") else {
        return;
    };
    let (r, truth, _) = example(&py, "--windows 512 --epochs 1 --workers 2 --multiprocessing");
    let spans = &stage(&r, "train").spans;
    assert!(spans["train_step"].calls > 0, "{spans:?}");
    // Batches made in the pool's processes are beside the main thread.
    let made = spans["loader_produce"].calls;
    assert!(made >= 16, "16 batches of fit and as many of evaluate, some made ahead: {made}");
    assert!(spans["loader_produce"].concurrent_s > 0.0, "{spans:?}");
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
    let r = reports::read(&out);
    let stage = stage(&r, "fit");
    let warnings: Vec<&str> = stage.span_warnings.iter().map(String::as_str).collect();
    let refused: Vec<&&str> =
        warnings.iter().filter(|w| w.contains("no trainer with make_train_function")).collect();
    assert_eq!(refused.len(), 1, "{warnings:?}");
    assert!(
        warnings.iter().any(|w| w.starts_with("input-bound: unknown, because")),
        "{warnings:?}"
    );
    assert!(!stage.figures.contains_key("input_wait_fraction"), "{stage:?}");
    assert!(f.stdout.contains("input-bound: unknown, because"), "{}", f.stdout);
    assert!(!f.stdout.contains("% of its step time"), "{}", f.stdout);
}
