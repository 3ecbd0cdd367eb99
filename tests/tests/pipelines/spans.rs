//! Spans without editing code (`--span`): an unmodified program's
//! functions timed, misses named, no bootstrap when none is asked for,
//! refusals, a campaign that names its spans, and the torch preset.

use harness::{coordinator, coordinator_with_output, json, python, python_on_path, repo, run};

/// `--span` on an unmodified program (tests/scripts/autospan_user.py, which
/// never imports stagebench): a function, a method, a classmethod, a
/// staticmethod, a module imported late and a forked child are timed;
/// recursion is one span, nesting two; names that never match are named.
#[test]
fn spans_named_on_the_command_line_time_an_unmodified_program() {
    let (_tmp, out, mut c) = coordinator_with_output();
    let py = python(&mut c);
    let user = repo().join("tests/scripts/autospan_user.py");
    c.args(["--quiet", "--name", "user", "--command"]).arg(format!("'{py}' '{}'", user.display()));
    for s in [
        "autospan_lib:plain",
        "autospan_lib:Shape.area",
        "autospan_lib:Shape.make=make_shape",
        "autospan_lib:Shape.unit",
        "autospan_lib:recurse",
        "autospan_lib:outer",
        "autospan_lib:inner",
        "autospan_late:work",
        "autospan_lib:missing",
        "never_imported:f",
    ] {
        c.args(["--span", s]);
    }
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = harness::reports::read(&out);
    let stage = harness::reports::stage(&r, "user");
    let figures = &stage.figures;
    for (name, n) in [
        ("plain", 2.0), // the parent's call and the forked child's
        ("area", 1.0),
        ("make_shape", 1.0),
        ("unit", 1.0),
        ("recurse", 1.0), // recursion: the outermost call only
        ("outer", 1.0),
        ("inner", 2.0), // nested in outer, recorded as its own name
        ("work", 1.0),  // a module imported inside a function
    ] {
        let figure = |f: &str| harness::reports::figure(stage, f);
        assert_eq!(figure(&format!("span:{name}_n")), n, "{name}: {figures:?}");
    }
    let figure = |f: &str| harness::reports::figure(stage, f);
    let plain = figure("span:plain_s");
    assert!(plain >= 0.004, "3 ms and 1 ms of sleep, timed: {plain}");
    let (outer, inner) = (figure("span:outer_s"), figure("span:inner_s"));
    assert!(inner <= outer && inner >= 0.002, "inner {inner} inside outer {outer}");
    assert_eq!(stage.spans_not_found, ["autospan_lib:missing", "never_imported:f"]);
    assert!(
        f.stdout.contains(
            "warning: --span autospan_lib:missing, never_imported:f matched nothing in stage user"
        ),
        "{}",
        f.stdout
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("Warning: --span autospan_lib:missing"), "{summary}");
    let d = json(&out.join("declaration.json"));
    assert_eq!(d["parameters"]["spans"][2], "autospan_lib:Shape.make=make_shape");
    // The bootstrap is gone with the stage.
    let left: Vec<String> =
        harness::files_below(&out).into_iter().filter(|f| f.contains("bootstrap")).collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Every command gets the helper first on its PYTHONPATH (provenance),
/// with no span target unless `--span` names one; `--no-provenance` and no
/// `--span` leave it untouched. The user's own sitecustomize runs every
/// time.
#[test]
fn the_helper_is_on_every_commands_path_without_targets_unless_asked_and_a_users_sitecustomize_still_runs()
 {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let marker = tmp.path().join("marker");
    std::fs::write(
        theirs.join("sitecustomize.py"),
        format!("open({:?}, 'a').write('theirs ran\\n')\n", marker.display().to_string()),
    )
    .unwrap();
    let seen = tmp.path().join("seen");
    let probe = tmp.path().join("probe.py");
    std::fs::write(
        &probe,
        format!(
            "import os, sys\nopen({:?}, 'w').write(repr((os.environ.get('PYTHONPATH'), 'STAGEBENCH_SPAN_TARGETS' in os.environ, 'stagebench.autospan' in sys.modules)))\n",
            seen.display().to_string()
        ),
    )
    .unwrap();
    let each = |spans: &[&str], provenance: bool| {
        let (_t, _out, mut c) = coordinator_with_output();
        let py = python(&mut c);
        let path = match c.get_envs().find(|(k, _)| *k == "PYTHONPATH").and_then(|(_, v)| v) {
            Some(v) => format!("{}:{}", theirs.display(), v.to_string_lossy()),
            None => theirs.display().to_string(),
        };
        c.env("PYTHONPATH", &path)
            .arg("--quiet")
            .arg("--command")
            .arg(format!("'{py}' '{}'", probe.display()));
        for s in spans {
            c.args(["--span", s]);
        }
        if !provenance {
            c.arg("--no-provenance");
        }
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        (path, std::fs::read_to_string(&seen).unwrap())
    };
    let (path, got) = each(&[], false);
    assert_eq!(
        got,
        format!("({path:?}, False, False)").replace('"', "'"),
        "--no-provenance: untouched"
    );
    let (_, got) = each(&[], true);
    assert!(got.contains(".spans-bootstrap-") && got.contains(", False, False)"), "{got}");
    let (_, got) = each(&["json:loads"], false);
    assert!(got.contains(".spans-bootstrap-") && got.contains(", True, True)"), "{got}");
    let ran = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(
        ran, "theirs ran\ntheirs ran\ntheirs ran\n",
        "the user's sitecustomize ran every time"
    );
}

#[test]
fn bad_span_targets_are_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    for (args, says) in [
        (&["--command", "true", "--span", "json.loads"][..], "has no colon"),
        (&["--command", "true", "--span", ":loads"], "the module '' is not a dotted Python name"),
        (&["--command", "true", "--span", "json:"], "the qualname '' is not"),
        (&["--command", "true", "--span", "json:loads=a/b"], "the span name 'a/b' must be"),
        (
            &["--command", "true", "--span", "preset:tf"],
            "unknown preset 'tf' (known: torch, keras)",
        ),
        (&["--command", "true", "--span", "preset:keras:stage"], "a preset cannot be a stage"),
        (
            &["--command", "true", "--span", "m:f=a", "--span", "m:f=b"],
            "--span m:f=a and --span m:f=b name the same function m:f: one function has one span name",
        ),
        (
            &["--command", "true", "--span", "preset:torch", "--keras-resident", "5"],
            "--keras-resident times the resident steps of --span preset:keras",
        ),
        (
            &["--stage", "noop", "--span", "json:loads"],
            "applies to --command stages and --prepare programs",
        ),
        (
            &["--mode", "profile", "--span", "json:loads"],
            "applies to --command stages and --prepare programs",
        ),
    ] {
        let mut c = coordinator();
        c.args(args).arg("--output").arg(&out);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        let lines: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{}", f.stderr);
        assert!(lines[0].contains(says), "{args:?}: {}", lines[0]);
        assert!(!out.exists());
    }
}

/// The worked example's campaign run three times with one trial each: over
/// chain.py, which calls the helper, and over plain.py, which calls nothing
/// and whose spans the campaign file names, campaign-wide and then in each
/// `[[pipeline]]` stage. Their judgments say the same
/// sentences: each sentence's opening words and the set of span and stage
/// names it gives (times, their units and the order of near-equal spans
/// differ from run to run).
#[test]
fn a_campaign_naming_its_spans_judges_an_unchanged_chain_as_the_helper_does() {
    let example = repo().join("examples/pipeline");
    let read = |file: &str| std::fs::read_to_string(example.join(file)).unwrap();
    let judge = |file: &str, toml: String, steps: &str| {
        let tmp = tempfile::tempdir().unwrap();
        for f in ["chain.py", "plain.py", "fitting.py"] {
            std::fs::copy(example.join(f), tmp.path().join(f)).unwrap();
        }
        std::fs::create_dir(tmp.path().join("scratch")).unwrap();
        // One trial, and the steps both campaigns share.
        let head = toml.split("[[step]]").next().unwrap().replace("trials = 3\n", "trials = 1\n");
        let path = tmp.path().join("c.toml");
        std::fs::write(&path, format!("{head}{steps}")).unwrap();
        let out = tmp.path().join("campaign");
        let mut c = coordinator();
        python_on_path(&mut c);
        c.arg("campaign").arg(&path).arg("--output").arg(&out);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{file}: {}\n{}", f.stdout, f.stderr);
        f.assert_no_worker_left();
        let r = harness::reports::campaign(&out);
        let said: Vec<(String, std::collections::BTreeSet<String>)> = r
            .judgment
            .iter()
            .map(|l| {
                let opening: String = l
                    .split_whitespace()
                    .take_while(|w| !w.chars().any(|c| c.is_ascii_digit()))
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ");
                let names = l
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/'))
                    .filter(|w| w.contains('_') || w.contains('/'))
                    .map(str::to_string)
                    .collect();
                (opening, names)
            })
            .collect();
        said
    };
    let steps = "[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n\n[[step]]\nname = \"killed_after_recompute\"\nkind = \"interrupted\"\nkill_at = \"mass:span:max_lh_fit_recompute:1\"\n";
    let helper = judge("campaign.toml", read("campaign.toml"), steps);
    let plain = read("campaign-plain.toml");
    let named = judge("campaign-plain.toml", plain.clone(), steps);
    // The same targets named by each [[pipeline]] stage instead of campaign-wide.
    let from = plain.find("\nspans = [").unwrap() + 1;
    let block = &plain[from..from + plain[from..].find("]\n").unwrap() + 2];
    let per_stage =
        plain.replacen(block, "", 1).replace("[[pipeline]]\n", &format!("[[pipeline]]\n{block}"));
    assert_eq!(per_stage.matches("fitting:search_fit").count(), 3, "{per_stage}");
    let staged = judge("per-stage spans", per_stage, steps);
    assert!(
        helper.iter().any(|(o, n)| o == "It skipped" && n.contains("light/search_fit")),
        "{helper:?}"
    );
    assert!(
        helper
            .iter()
            .any(|(o, n)| o.starts_with("The largest repeated")
                && n.contains("max_lh_fit_recompute")),
        "{helper:?}"
    );
    assert_eq!(named, helper, "the same judgment, spans named or called");
    assert_eq!(staged, helper, "the same judgment, spans named per stage or campaign-wide");
}

/// `--span preset:torch` on examples/torch/train.py, which has no
/// stagebench in it, for real: with `STAGEBENCH_TORCH_PYTHON` naming a
/// Python with torch; SKIPPED otherwise. The loader waits, steps, optimizer
/// steps and backward passes counted equal the batches the script ran, and
/// the stage gets an input-wait fraction and its grade.
#[test]
fn the_torch_preset_counts_every_batch_of_an_unmodified_training_script() {
    let Some(py) = harness::torch_python(
        "the_torch_preset_counts_every_batch_of_an_unmodified_training_script",
    ) else {
        return;
    };
    let (_tmp, out, mut c) = coordinator_with_output();
    let script = repo().join("examples/torch/train.py");
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--name", "train"])
        .arg("--command")
        .arg(format!("'{py}' '{}' --batches 12 --work 200", script.display()))
        .args(["--span", "preset:torch"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let report = harness::reports::read(&out);
    let trials = &harness::reports::trials(&report).trials["train"].samples;
    let counts = |name: &str| -> Vec<f64> {
        let key = format!("span:{name}_n");
        trials.get(&key).unwrap_or_else(|| panic!("no samples of {key}")).clone()
    };
    for name in ["step", "optimizer_step", "backward"] {
        assert_eq!(counts(name), [12.0, 12.0], "{name}");
    }
    // The first batch of the epoch also starts the loader's workers.
    assert_eq!(counts("loader_start"), [1.0, 1.0]);
    assert_eq!(counts("loader_wait"), [11.0, 11.0]);
    let train = harness::reports::stage(&report, "train");
    let fraction = harness::reports::figure(train, "input_wait_fraction");
    assert!((0.0..1.0).contains(&fraction), "{fraction}");
    assert!(train.spans_not_found.is_empty(), "{train:?}");
    assert!(f.stdout.contains("input: train waited for its loader"), "{}", f.stdout);
    assert!(f.stdout.contains("; 11 loader waits"), "{}", f.stdout);
    // The verdict both ways: a loader that does 100x the work per item
    // under a narrow network is highly input-bound; no loader work under a
    // wide one is not.
    let verdict = |args: &str| {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--name", "train"])
            .arg("--command")
            .arg(format!("'{py}' '{}' --batches 12 {args}", script.display()))
            .args(["--span", "preset:torch"]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        let report = harness::reports::read(&out);
        harness::reports::figure(harness::reports::stage(&report, "train"), "input_wait_fraction")
    };
    let starved = verdict("--work 20000 --width 8");
    let fed = verdict("--work 0 --width 256");
    assert!(starved >= 0.20, "a starved loop is highly input-bound: {starved}");
    assert!(fed < 0.05, "a fed loop is not input-bound: {fed}");
}

/// `preset:torch` against the script's own clock (examples/torch/train.py
/// `--truth`): each optimizer step timed whole (PyTorch's profiler block
/// and hooks included) agrees with the script's timing of `opt.step()`,
/// and each epoch's last `next()`, which waits for the loader's workers to
/// stop, is a span `loader_stop`. Where `STAGEBENCH_TORCH_PYTHON` has torch.
#[test]
fn the_torch_preset_times_whole_optimizer_steps_and_each_epochs_end() {
    let Some(py) =
        harness::torch_python("the_torch_preset_times_whole_optimizer_steps_and_each_epochs_end")
    else {
        return;
    };
    let (tmp, out, mut c) = coordinator_with_output();
    let truth = tmp.path().join("truth.json");
    let script = repo().join("examples/torch/train.py");
    c.args(["--name", "train", "--command"])
        .arg(format!(
            "'{py}' '{}' --batches 12 --epochs 2 --truth '{}'",
            script.display(),
            truth.display()
        ))
        .args(["--span", "preset:torch"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = harness::reports::read(&out);
    let spans = &harness::reports::stage(&r, "train").spans;
    let truth = json(&truth);
    let own = |k: &str| -> Vec<f64> {
        let mut v: Vec<f64> =
            truth[k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let steps = own("optimizer_step");
    assert_eq!(spans["optimizer_step"].calls as usize, steps.len());
    let median = |v: &[f64]| match v.len() % 2 {
        1 => v[v.len() / 2],
        _ => (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0,
    };
    let (got, want) = (spans["optimizer_step"].median_s, median(&steps));
    // The hooks' block alone cost 0.25 to 0.9 ms a call: 10% + 50 µs sees it.
    assert!(
        (got - want).abs() <= 0.10 * want + 50e-6,
        "optimizer_step median {got} against {want}"
    );
    let stops = own("stop");
    assert_eq!(spans["loader_stop"].calls, 2, "{spans:?}");
    let (got, want) = (spans["loader_stop"].sum_s, stops.iter().sum::<f64>());
    assert!((got - want).abs() <= 0.10 * want + 0.001, "loader_stop {got} against {want}");
    assert!(f.stdout.contains("its workers' shutdown at each epoch's end"), "{}", f.stdout);
}
