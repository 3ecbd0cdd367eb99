//! The campaign file's checks, each made to refuse.

use super::paths::resolved;
use super::*;

#[test]
fn the_embedded_default_parses() {
    let f = parse(DEFAULT).unwrap();
    assert_eq!(f.campaign.name, "cold-resume");
    assert!(f.steps.iter().any(|s| s.kind == StepKind::Interrupted));
}

#[test]
fn mistakes_are_refused_with_what_is_wrong() {
    let base = "[campaign]\nname = \"x\"\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n";
    let refused = |extra: &str, needle: &str| {
        let e = parse(&format!("{base}{extra}")).unwrap_err().0;
        assert!(e.contains(needle), "{e:?} does not say {needle:?}");
        assert!(!e.contains('\n'), "{e:?} is not one line");
    };
    refused("colour = 1\n", "colour");
    refused("[[step]]\nname = \"r\"\nkind = \"resume\"\nretries = 2\n", "retries");
    refused("[[step]]\nname = \"i\"\nkind = \"interrupted\"\n", "kill_at");
    refused("[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"warp:0.5\"\n", "warp");
    refused("[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"train:2\"\n", "fraction");
    refused("[[step]]\nname = \"cold\"\nkind = \"resume\"\n", "two steps");
    refused("[[step]]\nname = \"r\"\nkind = \"sideways\"\n", "sideways");
    // Where: the line and its text.
    refused(
        "[[step]]\nname = \"r\"\nkind = \"resume\"\npolicy = \"lod\"\n",
        "line 9 (policy = \"lod\"): ",
    );
    let e = parse("[campaign]\nname = \"x\"\nepochs = \"2\"\n").unwrap_err().0;
    assert!(e.starts_with("line 3 (epochs = \"2\"): invalid type"), "{e}");
    let e = parse("[campaign]\nname = \"x\"\n[[step]]\nname = \"r\"\nkind = \"resume\"\n")
        .unwrap_err()
        .0;
    assert!(e.contains("cold step must come first"), "{e}");
    parse(base).unwrap();
}

/// A campaign's epochs have the limit `--epochs` has: one constant (the
/// command line's side is `cli::docs_tests`'s).
#[test]
fn epochs_are_bounded_as_the_command_line_bounds_them() {
    let with = |epochs: u32| {
        parse(&format!(
            "[campaign]\nname = \"x\"\nepochs = {epochs}\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n"
        ))
    };
    with(MAX_EPOCHS).unwrap();
    for bad in [0, MAX_EPOCHS + 1] {
        let e = with(bad).unwrap_err().0;
        assert_eq!(e, format!("epochs = {bad} must be between 1 and 10000"));
    }
}

#[test]
fn a_pipelines_roles_and_kill_points_are_checked_before_anything_runs() {
    let base = "[campaign]\nname = \"x\"\n[[pipeline]]\nname = \"fit\"\nargv = [\"true\"]\n";
    let steps = "[[step]]\nname = \"cold\"\nkind = \"cold\"\n";
    let refused = |pipeline_extra: &str, step: &str, needle: &str| {
        let e = parse(&format!("{base}{pipeline_extra}{steps}{step}")).unwrap_err().0;
        assert!(e.contains(needle), "{e:?} does not say {needle:?}");
        assert!(!e.contains('\n'), "{e:?} is not one line");
    };
    let interrupted =
        |k: &str| format!("[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"{k}\"\n");
    refused("roles = { search = \"magic\" }\n", "", "magic");
    refused("roles = { \"a/b\" = \"work\" }\n", "", "span name 'a/b'");
    refused("", &interrupted("warp:0.5"), "the pipeline does not have (fit)");
    refused("", &interrupted("fit:span:search:0"), "≥ 1");
    refused("", &interrupted("fit:after:0"), "positive");
    let ok = parse(&format!(
        "{base}roles = {{ search = \"work\" }}\n{steps}{}{}",
        interrupted("fit:span:search:2"),
        interrupted("fit:after:1.5").replace("\"i\"", "\"j\"")
    ))
    .unwrap();
    assert_eq!(ok.pipeline[0].roles["search"], Role::Work);
    // The recipe's stages report progress only.
    let recipe = "[campaign]\nname = \"x\"\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n";
    let e = parse(&format!("{recipe}{}", interrupted("train:after:1"))).unwrap_err().0;
    assert!(e.contains("apply to a pipeline's stages"), "{e}");
    let with_roles = recipe.replace("name = \"x\"\n", "name = \"x\"\nroles = { a = \"work\" }\n");
    let e = parse(&with_roles).unwrap_err().0;
    assert!(e.contains("roles apply to a pipeline"), "{e}");
}

/// Each place a scratch directory must not hold is refused in one line
/// naming it; a directory of the pipeline's own, beside them, is not.
#[test]
fn a_scratch_directory_that_holds_what_the_user_owns_is_refused() {
    let places = Places {
        home: Some("/home/ana".into()),
        cwd: "/home/ana/project".into(),
        campaign_file: Some("/home/ana/project/pipe/campaign.toml".into()),
        output: "/home/ana/project/campaigns".into(),
    };
    let refused = |scratch: &str| guard_scratch(Path::new(scratch), &places).err().map(|e| e.0);
    for (scratch, what) in [
        ("/", "the root of the file system"),
        ("/home", "your home directory"),
        ("/home/ana", "your home directory"),
        ("/home/ana/project", "the current directory"),
        ("/home/ana/project/pipe", "the campaign file"),
        ("/home/ana/project/campaigns", "the campaign's output directory"),
    ] {
        let e = refused(scratch).unwrap_or_else(|| panic!("scratch {scratch} was accepted"));
        assert!(e.contains(what) && !e.contains('\n'), "{scratch}: {e}");
    }
    assert_eq!(refused("/home/ana/project/pipe/scratch"), None);
    assert_eq!(refused("/srv/scratch"), None);
    // A prefix that is not a parent holds nothing.
    assert_eq!(refused("/home/ana/proj"), None);
}

/// A path is resolved through what exists of it, and the rest joined on.
#[test]
fn a_path_is_resolved_as_far_as_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
    assert_eq!(resolved(&real, Path::new("link/not/yet")), real.join("not/yet"));
    assert_eq!(resolved(Path::new("/"), &real.join("link")), real);
}
