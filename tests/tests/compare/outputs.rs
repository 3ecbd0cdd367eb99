//! Where a comparison writes, and what it says it compared.

use super::{compare, nap_run};
use harness::{coordinator, run};

/// `compare A B --html A/cmp.html` (or `--output A/dir`) would write into
/// run A, which would then fail `verify`, and so would every later compare
/// of A: refused in one line (exit 2), nothing written, A still verifying.
#[test]
fn an_output_inside_a_run_directory_is_refused_and_the_run_still_verifies() {
    let mut keep = Vec::new();
    let a = nap_run("0.01", "3", &mut keep);
    let b = nap_run("0.01", "3", &mut keep);
    let nested = a.join("plots");
    for (flag, path) in [
        ("--html", a.join("cmp.html")),
        ("--output", a.join("cmp")),
        ("--html", nested.join("cmp.html")),
    ] {
        let f = compare(&a, &b, &[flag, path.to_str().unwrap()]);
        assert_eq!(f.code(), Some(2), "{flag} {}: {}{}", path.display(), f.stdout, f.stderr);
        let line = f.stderr.lines().find(|l| l.contains("inside the evidence directory"));
        let line = line.unwrap_or_else(|| panic!("{flag}: {}", f.stderr));
        assert!(line.contains(flag) && line.contains("write it elsewhere"), "{line}");
        assert!(!path.exists(), "{} was written", path.display());
    }
    let mut c = coordinator();
    c.arg("verify").arg(&a);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}{}", f.stdout, f.stderr);
    // Beside the runs, not in them, it is written.
    let page = a.parent().unwrap().join("cmp.html");
    let f = compare(&a, &b, &["--html", page.to_str().unwrap()]);
    assert!(matches!(f.code(), Some(0 | 4)), "{}{}", f.stdout, f.stderr);
    assert!(page.is_file());
    // Which runs A and B are, on the console and on the page: each
    // directory's name (never its path), start, commit and declaration.
    let html = std::fs::read_to_string(&page).unwrap();
    for (side, dir) in [("A", &a), ("B", &b)] {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let declared = harness::reports::read(dir).declaration_sha256;
        let line = f.stdout.lines().find(|l| l.starts_with(&format!("{side}: ")));
        let line = line.unwrap_or_else(|| panic!("no {side}: {}", f.stdout));
        assert!(line.starts_with(&format!("{side}: {name} (started ")), "{line}");
        assert!(line.contains(&format!("declaration {})", &declared[..12])), "{line}");
        assert!(!line.contains(dir.parent().unwrap().to_str().unwrap()), "a path: {line}");
        assert!(html.contains(&format!("<tr data-side=\"{side}\">")), "no row for {side}");
        assert!(html.contains(&declared[..12]), "the page lacks {side}'s declaration");
    }
    assert!(html.contains("What each ran on (A | B)"), "no comparability block");
}
