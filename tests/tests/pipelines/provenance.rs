//! Provenance of a user's command, whatever the flags: the interpreter,
//! the libraries and the hashes of its own imported sources at its exit,
//! `--sources` bound into the declaration before it runs, and `compare`
//! naming a changed source.

use harness::{coordinator, json, python, run};
use std::path::Path;

/// A project in `dir`: a script importing a module of its own.
fn project(dir: &Path, helper: &str) {
    std::fs::write(dir.join("train.py"), "import mylib\nprint(mylib.twice(21))\n").unwrap();
    std::fs::write(dir.join("mylib.py"), format!("def twice(x):\n    return {helper}\n")).unwrap();
}

/// One diagnostic run of the project's script from `dir`.
fn run_in(dir: &Path, out: &Path, extra: &[&str]) -> harness::Finished {
    let mut c = coordinator();
    let py = python(&mut c);
    c.current_dir(dir)
        .args(["--quiet", "--name", "train", "--output"])
        .arg(out)
        .arg("--command")
        .arg(format!("'{py}' train.py"))
        .args(extra);
    run(c)
}

#[test]
fn a_python_commands_own_sources_are_hashed_at_exit_and_compare_names_a_changed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    project(&dir, "2 * x");
    let a = tmp.path().join("a");
    let f = run_in(&dir, &a, &[]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let r = harness::reports::read(&a);
    let train = harness::reports::stage(&r, "train");
    let runtime = train.runtime.as_ref().expect("what the stage ran on");
    assert!(runtime.python.as_deref().is_some_and(|p| p.starts_with('3')), "{runtime:?}");
    let sources = &runtime.sources;
    let names: Vec<&String> = sources.keys().collect();
    assert_eq!(names, ["__main__", "mylib"], "the script and its own module, no helper, no path");
    let sha = |p: &str| {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(std::fs::read(dir.join(p)).unwrap());
        digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert_eq!(sources["mylib"], sha("mylib.py"));
    assert_eq!(sources["__main__"], sha("train.py"));
    let text = std::fs::read_to_string(a.join("report.json")).unwrap();
    assert!(!text.contains(&dir.display().to_string()), "no path in the report");

    // The same code again: nothing marked. A changed module: named.
    let same = tmp.path().join("same");
    assert_eq!(run_in(&dir, &same, &[]).code(), Some(0));
    project(&dir, "x + x");
    let b = tmp.path().join("b");
    assert_eq!(run_in(&dir, &b, &[]).code(), Some(0));
    let compare = |other: &Path| {
        let mut c = coordinator();
        c.arg("compare").arg(&a).arg(other);
        run(c)
    };
    let line = |f: &harness::Finished, what: &str| -> String {
        f.stdout.lines().find(|l| l.trim_start().starts_with(what)).unwrap_or_default().to_string()
    };
    let unchanged = compare(&same);
    let l = line(&unchanged, "stage train: sources");
    assert!(l.contains("2 file(s), the same") && l.ends_with("same"), "{}", unchanged.stdout);
    let changed = compare(&b);
    let l = line(&changed, "stage train: sources");
    assert!(
        l.contains("mylib ") && l.ends_with("differs (information)") && !l.contains("__main__"),
        "{}",
        changed.stdout
    );

    // Without the helper: no runtime at all.
    let none = tmp.path().join("none");
    assert_eq!(run_in(&dir, &none, &["--no-provenance"]).code(), Some(0));
    let r = harness::reports::read(&none);
    let train = harness::reports::stage(&r, "train");
    assert!(train.runtime.as_ref().is_none_or(|r| r.python.is_none()), "{train:?}");
}

#[test]
fn declared_sources_are_hashed_before_the_run_and_bad_patterns_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    project(&dir, "2 * x");
    let out = tmp.path().join("run");
    let f = run_in(&dir, &out, &["--sources", "*.py"]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let d = json(&out.join("declaration.json"));
    let declared = d["parameters"]["sources"].as_object().unwrap();
    let names: Vec<&String> = declared.keys().collect();
    assert_eq!(names, ["mylib.py", "train.py"]);
    for (bad, says) in [
        ("/etc/*.conf", "by a relative pattern without '..'"),
        ("../*.py", "by a relative pattern without '..'"),
        ("nothing/*.py", "matched no file"),
        ("[", "--sources '['"),
    ] {
        let out = tmp.path().join("refused");
        let f = run_in(&dir, &out, &["--sources", bad]);
        assert_eq!(f.code(), Some(2), "{bad}: {}", f.stderr);
        let lines: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{}", f.stderr);
        assert!(lines[0].contains(says), "{bad}: {}", lines[0]);
        assert!(!out.exists());
    }
    // A declared file changed between two runs: compare marks every row.
    let again = tmp.path().join("again");
    project(&dir, "x + x");
    assert_eq!(run_in(&dir, &again, &["--sources", "*.py"]).code(), Some(0));
    let mut c = coordinator();
    c.arg("compare").arg(&out).arg(&again);
    let f = run(c);
    let declared =
        f.stdout.lines().find(|l| l.trim_start().starts_with("declared sources")).unwrap();
    assert!(
        declared.contains("mylib.py ") && declared.ends_with("differs (information)"),
        "{}",
        f.stdout
    );
}
