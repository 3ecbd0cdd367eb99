//! What a campaign refuses before anything runs: a file with a mistake, a
//! pipeline reset outside scratch or a missing command, a scratch directory
//! that holds the user's files or is in use.

use crate::{CAMPAIGN, campaign_file, pipeline};
use harness::{coordinator, run, run_campaign};

#[test]
fn a_campaign_file_with_a_mistake_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    for (mistake, needle) in [
        (
            "[campaign]\nname = \"x\"\ncolour = \"red\"\n[[step]]\nname = \"c\"\nkind = \"cold\"\n",
            "colour",
        ),
        (
            "[campaign]\nname = \"x\"\n[[step]]\nname = \"c\"\nkind = \"cold\"\n[[step]]\nname = \"i\"\nkind = \"interrupted\"\n",
            "kill_at",
        ),
        (
            "[campaign]\nname = \"x\"\n[[step]]\nname = \"c\"\nkind = \"cold\"\n[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"warp:0.5\"\n",
            "warp",
        ),
        (
            "[campaign]\nname = \"x\"\n[[step]]\nname = \"r\"\nkind = \"resume\"\n",
            "cold step must come first",
        ),
    ] {
        let file = campaign_file(tmp.path(), mistake);
        let out = tmp.path().join("out");
        let f = run_campaign(&file, &out);
        assert_eq!(f.code(), Some(2), "{needle}: {}", f.stderr);
        let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "{}", f.stderr);
        assert!(errors[0].contains(needle), "{needle}: {}", f.stderr);
        assert!(!out.exists(), "{needle}: a refused campaign created its output");
        assert!(!f.stderr.contains("worker spawned"), "{needle}: something ran");
    }
    // An existing output directory is never written into.
    let file = campaign_file(tmp.path(), CAMPAIGN);
    let out = tmp.path().join("taken");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("mine.txt"), b"keep").unwrap();
    let f = run_campaign(&file, &out);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("already exists"), "{}", f.stderr);
    assert_eq!(harness::files_below(&out), ["mine.txt"]);
}

#[test]
fn a_pipeline_with_a_reset_outside_scratch_or_a_missing_command_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("precious")).unwrap();
    std::fs::write(tmp.path().join("precious/thesis.tex"), b"x").unwrap();
    // Inside scratch by its name, outside through a symlink.
    std::fs::create_dir_all(tmp.path().join("work")).unwrap();
    std::os::unix::fs::symlink("../precious", tmp.path().join("work/escape")).unwrap();
    for (extra, needle) in [
        (
            "[[pipeline]]\nname = \"wipe\"\nargv = [\"true\"]\nreset = [\"work/escape\"]\n",
            "not inside the scratch directory",
        ),
        (
            "[[pipeline]]\nname = \"wipe\"\nargv = [\"true\"]\nreset = [\"work/escape/not-yet\"]\n",
            "not inside the scratch directory",
        ),
        (
            "[[pipeline]]\nname = \"wipe\"\nargv = [\"true\"]\nreset = [\"precious\"]\n",
            "not inside the scratch directory",
        ),
        (
            "[[pipeline]]\nname = \"wipe\"\nargv = [\"true\"]\nreset = [\"work/../precious\"]\n",
            "not inside the scratch directory",
        ),
        ("[[pipeline]]\nname = \"ghost\"\nargv = [\"no-such-program-5e1f\"]\n", "not found"),
        ("[[pipeline]]\nname = \"empty\"\nargv = []\n", "no command"),
    ] {
        let file = pipeline(tmp.path(), extra);
        let out = tmp.path().join("out");
        let f = run_campaign(&file, &out);
        assert_eq!(f.code(), Some(2), "{needle}: {}", f.stderr);
        assert!(f.stderr.contains(needle), "{needle}: {}", f.stderr);
        assert_eq!(f.stderr.lines().filter(|l| l.starts_with("error")).count(), 1, "{}", f.stderr);
        assert!(!out.exists(), "{needle}: something ran");
        assert!(tmp.path().join("precious/thesis.tex").exists());
    }
    // A scratch directory that does not exist: the error says to create it.
    let file = pipeline(tmp.path(), "");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("scratch = \"work\"", "scratch = \"nowhere\"");
    std::fs::write(&file, text).unwrap();
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(tmp.path().join("out"));
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(
        f.stderr.contains("scratch = \"nowhere\" does not exist: create it first"),
        "{}",
        f.stderr
    );
}

/// A scratch directory of "/" or one holding the campaign file would let a
/// cold step reset a directory of the user's elsewhere: refused in one line
/// before any lock, reset or output is written.
#[test]
fn a_scratch_directory_that_holds_the_users_files_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let file = pipeline(tmp.path(), "");
    let victim = tmp.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("mine.txt"), b"mine").unwrap();
    let root_lock = std::path::Path::new("/.stagebench.lock");
    let had_root_lock = root_lock.exists();
    let text = std::fs::read_to_string(&file).unwrap();
    let at_root = text.replacen("scratch = \"work\"", "scratch = \"/\"", 1).replacen(
        "reset = [\"work/adapt_images\"]",
        &format!("reset = [{:?}]", victim.display().to_string()),
        1,
    );
    let holding_file = text.replacen("scratch = \"work\"", "scratch = \".\"", 1);
    for (name, text, says) in [
        ("root.toml", at_root, "is the root of the file system"),
        ("holding.toml", holding_file, "holds the campaign file"),
    ] {
        let file = tmp.path().join(name);
        std::fs::write(&file, text).unwrap();
        let out = tmp.path().join(format!("out-{name}"));
        let f = run_campaign(&file, &out);
        assert_eq!(f.code(), Some(2), "{name}: {}", f.stderr);
        let line = f.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(line.contains(says), "{name}: {line}");
        assert!(!out.exists(), "{name}: the refused campaign wrote {}", out.display());
    }
    assert_eq!(std::fs::read(victim.join("mine.txt")).unwrap(), b"mine");
    assert_eq!(root_lock.exists(), had_root_lock, "a lock file was written at /");
    assert!(!tmp.path().join(".stagebench.lock").exists(), "a lock file was written");
}

#[test]
fn a_scratch_directory_in_use_is_refused_before_anything_is_written() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let tmp = tempfile::tempdir().unwrap();
    let file = pipeline(tmp.path(), "");
    // Another holder of the scratch directory's lock, as a second campaign
    // on the same scratch would be.
    let mut lock = std::fs::File::create(tmp.path().join("work/.stagebench.lock")).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    write!(lock, "{}", std::process::id()).unwrap();
    let out = tmp.path().join("campaign");
    let f = run_campaign(&file, &out);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    let line = f.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("scratch") && line.contains("is in use by another stagebench run"));
    assert!(line.contains(&format!("(pid {})", std::process::id())), "{line}");
    assert!(!out.exists(), "the refused campaign wrote {}", out.display());
    assert!(!tmp.path().join("work/adapt_images").exists(), "a stage ran");
    // Released, the same campaign runs.
    drop(lock);
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    assert_eq!(run(c).code(), Some(0));
}
