//! What the preparation phases read from storage: `--os-cache cold` drops
//! the inputs from the page cache before each phase, and each then reads
//! them from storage; `as-is`, right after the dataset's verification read
//! every file, reads next to nothing. Both ways, in one test.

use harness::data::tiny;
use harness::{json, run};

fn cold_prep(os_cache: &str) -> serde_json::Value {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "2", "--os-cache", os_cache]);
    c.arg("--data").arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(f.stdout.contains("storage read: serial"), "{}", f.stdout);
    let declared = json(&out.join("declaration.json"));
    assert_eq!(declared["parameters"]["os_cache"], os_cache);
    let r = json(&out.join("report.json"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("### Storage"), "{summary}");
    r
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn os_cache_cold_reads_the_inputs_from_storage_and_as_is_reads_the_page_cache() {
    let r = cold_prep("cold");
    let storage = &r["storage"];
    assert_eq!(storage["os_cache"], "cold");
    let inputs = u(&storage["inputs_bytes"]);
    // The training series' files, as the dataset holds them.
    let frozen = json(&tiny().frozen.join("frozen.json"));
    let on_disk: u64 = frozen["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["partition"] == "train")
        .map(|s| std::fs::metadata(tiny().frozen.join(s["file"].as_str().unwrap())).unwrap().len())
        .sum();
    assert_eq!(inputs, on_disk);
    let phases = storage["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4, "two rounds of serial and parallel: {storage}");
    let warnings = r["warnings"].to_string();
    for p in phases {
        let eviction = &p["eviction"];
        assert_eq!(u(&eviction["bytes"]), inputs, "{p}");
        // The record of the phase carries the same figure.
        let record = &r["stages"][p["key"].as_str().unwrap()];
        assert_eq!(record["io_method"], "procfs", "{record}");
        assert_eq!(record["read_bytes"], p["read_bytes"]);
        if u(&eviction["resident_after_bytes"]) == 0 {
            assert!(
                u(&p["read_bytes"]) * 10 >= inputs * 9,
                "a phase whose inputs were evicted read them from storage: {p}"
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
    let r = cold_prep("as-is");
    let storage = &r["storage"];
    assert_eq!(storage["os_cache"], "as-is");
    assert_eq!(u(&storage["inputs_bytes"]), inputs);
    for p in storage["phases"].as_array().unwrap() {
        assert!(p.get("eviction").is_none(), "{p}");
        assert!(u(&p["read_bytes"]) * 10 < inputs, "a warm phase read under 10%: {p}");
    }
    assert!(!r["warnings"].to_string().contains("not cold"), "{}", r["warnings"]);
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
