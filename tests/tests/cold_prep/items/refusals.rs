//! Bad items files and flags, refused in one line before anything is
//! created.

use super::*;

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
    c.args(["--mode", "cold-prep", "--prefetch", "2"]).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("--prefetch applies to --prepare"), "{}", f.stderr);
    refused(b"a\n", &["--prefetch", "65"], "65 is not in 0..=64");
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
