//! What the preparation phases read from storage: `--os-cache cold` drops
//! the inputs from the page cache before each phase, and each then reads
//! them from storage; `as-is`, right after the dataset's verification read
//! every file, reads next to nothing. Both ways, in one test.

use harness::data::tiny;
use harness::{json, run};
use report::modes::cold_prep::storage::{PhaseStorage, Storage};
use report::rundir::report::Eviction;

/// A private copy of the tiny dataset, synced (clean pages can be
/// evicted): the shared one is read by this binary's other tests at the
/// same time, which would fill the page cache between an eviction and the
/// phase that follows it.
fn private_dataset(dir: &std::path::Path) -> std::path::PathBuf {
    let copy = dir.join("frozen");
    let mut dirs = vec![std::path::PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        std::fs::create_dir(copy.join(&rel)).unwrap();
        for e in std::fs::read_dir(tiny().frozen.join(&rel)).unwrap() {
            let e = e.unwrap();
            let rel = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                dirs.push(rel);
            } else {
                std::fs::copy(e.path(), copy.join(&rel)).unwrap();
                std::fs::File::open(copy.join(&rel)).unwrap().sync_all().unwrap();
            }
        }
    }
    copy
}

fn cold_prep(os_cache: &str, data: &std::path::Path) -> report::Report {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "2", "--os-cache", os_cache]);
    c.arg("--data").arg(data);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(f.stdout.contains("Storage read: serial"), "{}", f.stdout);
    let declared = json(&out.join("declaration.json"));
    assert_eq!(declared["parameters"]["os_cache"], os_cache);
    let r = harness::reports::read(&out);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("### Storage"), "{summary}");
    r
}

/// A cold-prep report's storage record and its warnings, one per line.
fn storage(r: &report::Report) -> (&Storage, String) {
    let section = harness::reports::cold_prep(r);
    (section.storage.as_ref().expect("the storage record"), section.warnings.join("\n"))
}

/// A phase's eviction, which `--os-cache cold` records.
fn evicted(p: &PhaseStorage) -> &Eviction {
    p.eviction.as_ref().unwrap_or_else(|| panic!("no eviction: {p:?}"))
}

#[test]
fn os_cache_cold_reads_the_inputs_from_storage_and_as_is_reads_the_page_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let data = private_dataset(tmp.path());
    let report = cold_prep("cold", &data);
    let (storage, warnings) = storage(&report);
    assert_eq!(storage.os_cache, "cold");
    let inputs = storage.inputs_bytes.expect("the inputs' size");
    // The training series' files, as the dataset holds them.
    let frozen = json(&data.join("frozen.json"));
    let on_disk: u64 = frozen["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["partition"] == "train")
        .map(|s| std::fs::metadata(data.join(s["file"].as_str().unwrap())).unwrap().len())
        .sum();
    assert_eq!(inputs, on_disk);
    let phases = &storage.phases;
    assert_eq!(phases.len(), 4, "two rounds of serial and parallel: {storage:?}");
    for p in phases {
        let eviction = evicted(p);
        assert_eq!(eviction.bytes, inputs, "{p:?}");
        // The record of the phase carries the same figure.
        let record = harness::reports::stage(&report, &p.key);
        let io = record.io.as_ref().expect("the phase's I/O");
        assert_eq!(io.io_method, "procfs", "{record:?}");
        assert_eq!(io.read_bytes, p.read_bytes);
        if eviction.resident_after_bytes == 0 {
            assert!(
                p.read_bytes * 10 >= inputs * 9,
                "a phase whose inputs were evicted read them from storage: {p:?}"
            );
        } else {
            // tmpfs, or pages that could not be dropped: the run says so.
            assert!(warnings.contains("could not evict the inputs"), "{warnings}");
        }
    }
    assert!(!warnings.contains("not cold") || warnings.contains("could not evict"), "{warnings}");

    // As it is: the dataset's verification has just read every file, so
    // the preparation is served from the page cache, and says nothing of
    // coldness (it was not asked for).
    let report = cold_prep("as-is", &data);
    let (storage, warnings) = self::storage(&report);
    assert_eq!(storage.os_cache, "as-is");
    assert_eq!(storage.inputs_bytes, Some(inputs));
    for p in &storage.phases {
        assert!(p.eviction.is_none(), "{p:?}");
        assert!(p.read_bytes * 10 < inputs, "a warm phase read under 10%: {p:?}");
    }
    assert!(!warnings.contains("not cold"), "{warnings}");
}

/// `--os-cache cold` needs to know what to evict: a user's preparation
/// without `--inputs` is refused, and so is another mode.
#[test]
fn os_cache_cold_without_inputs_or_outside_cold_prep_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let items = dir.path().join("items.txt");
    std::fs::write(&items, "a\nb\n").unwrap();
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--prepare", "true", "--os-cache", "cold", "--items"])
        .arg(&items);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("--os-cache cold with --prepare needs --inputs DIR"), "{}", f.stderr);
    assert!(!out.exists(), "nothing is created for a refused run");
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "trials", "--stage", "noop", "--os-cache", "cold"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("--os-cache applies to --mode cold-prep"), "{}", f.stderr);
    assert!(!out.exists());
}

/// A team's own preparation with `--os-cache cold --inputs DIR`: its
/// program's reads of the inputs, whole, come from storage in each phase
/// (counted over the program's life, as its items are timed by the clock).
#[test]
fn a_teams_preparation_reads_its_evicted_inputs_from_storage() {
    use std::io::Write;
    let (tmp, out, mut c) = harness::coordinator_with_output();
    let inputs = tmp.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    let mut ids = String::new();
    for i in 0..4 {
        let mut f = std::fs::File::create(inputs.join(format!("part{i}.bin"))).unwrap();
        let block: Vec<u8> = (0..1 << 20).map(|b| (b * 7 + i) as u8).collect();
        f.write_all(&block).unwrap();
        f.write_all(&block).unwrap();
        f.sync_all().unwrap();
        ids.push_str(&format!("part{i}.bin\n"));
    }
    let items = tmp.path().join("items.txt");
    std::fs::write(&items, ids).unwrap();
    let program = tmp.path().join("read.py");
    std::fs::write(
        &program,
        "import os, sys, stagebench\n\
         def prepare(item, out):\n\
         \x20   with open(os.path.join(sys.argv[1], item), 'rb') as f:\n\
         \x20       n = len(f.read())\n\
         \x20   with open(os.path.join(out, item + '.len'), 'w') as f:\n\
         \x20       f.write(str(n))\n\
         stagebench.serve(prepare)\n",
    )
    .unwrap();
    let py = harness::python(&mut c);
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--os-cache", "cold"]);
    c.arg("--prepare").arg(format!("{py} {} {}", program.display(), inputs.display()));
    c.arg("--items").arg(&items).arg("--inputs").arg(&inputs);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let (storage, warnings) = storage(&report);
    assert_eq!(storage.inputs_bytes, Some(8 << 20), "{storage:?}");
    let phases = &storage.phases;
    assert_eq!(phases.len(), 2, "{storage:?}");
    for p in phases {
        if evicted(p).resident_after_bytes == 0 {
            assert!(p.read_bytes >= (8 << 20) * 9 / 10, "{p:?}");
        } else {
            assert!(warnings.contains("could not evict"), "{warnings}");
        }
    }
    assert_eq!(harness::reports::cold_prep(&report).outputs_identical, Some(true));
}

/// `--os-cache cold` for a user who cannot write the inputs (issue 44):
/// the eviction works for any reader, but the kernel tells page-cache
/// residency only to a user who owns a file or may write it (to anyone
/// else `mincore` says every page is resident), so such a run read all
/// its inputs from storage yet warned "could not evict". Run as `nobody`
/// on root's synced dataset: every phase reads its inputs from storage,
/// the residency is recorded as unknown (never as resident), and the
/// warning says so. Needs root to drop to `nobody`, and binaries `nobody`
/// can run; elsewhere SKIPPED.
#[test]
fn os_cache_cold_is_proved_for_a_user_who_cannot_write_the_inputs() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    const TEST: &str = "os_cache_cold_is_proved_for_a_user_who_cannot_write_the_inputs";
    const NOBODY: u32 = 65534;
    // SAFETY: geteuid has no side effects.
    if unsafe { libc::geteuid() } != 0 {
        return harness::skip(TEST, "not root: cannot drop to another user");
    }
    let as_nobody = |c: &mut std::process::Command| {
        // SAFETY: setgroups, setgid and setuid between fork and exec.
        unsafe {
            c.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(NOBODY) != 0
                    || libc::setuid(NOBODY) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    };
    let mut probe = harness::coordinator();
    probe.arg("--version");
    as_nobody(&mut probe);
    if run(probe).code() != Some(0) {
        return harness::skip(TEST, "nobody cannot run the coordinator binary here");
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = private_dataset(tmp.path());
    let home = tmp.path().join("nobody");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = home.join("run");
    let mut c = harness::coordinator();
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--os-cache", "cold"]);
    c.arg("--data").arg(&data).arg("--output").arg(&out).env("HOME", &home);
    as_nobody(&mut c);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let (storage, warnings) = storage(&report);
    assert!(!warnings.contains("could not evict"), "a false 'resident': {warnings} {storage:?}");
    assert!(!warnings.contains("not cold"), "{warnings} {storage:?}");
    assert!(warnings.contains("left the page cache is unknown (the kernel tells"), "{warnings}");
    let inputs = storage.inputs_bytes.expect("the inputs' size");
    for p in &storage.phases {
        let e = evicted(p);
        assert_eq!(e.unknown_files, e.files, "{p:?}");
        assert_eq!(e.resident_after_bytes, 0, "unknown is not resident: {p:?}");
        assert!(p.read_bytes * 10 >= inputs * 9, "read from storage: {p:?}");
    }
}
