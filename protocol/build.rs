//! Embeds the program's identity at build time: a SHA-256 over every source
//! file of the workspace, the git commit when one is available, the rustc
//! version and the versions of the key crates from Cargo.lock. Both binaries
//! link this crate, so the coordinator can check that a worker is the same
//! build it declared.

use std::path::PathBuf;
use std::process::Command;

#[path = "src/sources.rs"]
mod sources;

/// Crates whose resolved versions are worth recording in environment.json.
const KEY_CRATES: &[&str] = &[
    "tokio",
    "nix",
    "serde",
    "bincode",
    "serde_json",
    "sha2",
    "rayon",
    "ndarray",
    "candle-core",
    "candle-nn",
    "clap",
    "arrow",
    "parquet",
    "plotters",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("protocol sits inside the workspace").to_path_buf();

    // Every file of every workspace member and of python/ (src/sources.rs).
    let files = sources::files(&root);
    for dir in sources::folders(&root) {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    println!("cargo:rerun-if-changed={}", root.join("Cargo.toml").display());
    println!("cargo:rerun-if-changed={}", root.join("Cargo.lock").display());
    let fingerprint = sources::digest(&root, &files);
    println!("cargo:rustc-env=STAGEBENCH_SOURCE_SHA256={fingerprint}");
    println!("cargo:rustc-env=STAGEBENCH_SOURCE_FILES={}", files.len());

    let git = root.join(".git");
    let commit = if git.exists() {
        for watched in ["HEAD", "refs/heads", "packed-refs"] {
            let p = git.join(watched);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    } else {
        String::new()
    };
    println!("cargo:rustc-env=STAGEBENCH_GIT_COMMIT={commit}");

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=STAGEBENCH_RUSTC_VERSION={rustc_version}");
    println!("cargo:rustc-env=STAGEBENCH_PROFILE={}", std::env::var("PROFILE").unwrap_or_default());

    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    println!("cargo:rustc-env=STAGEBENCH_KEY_CRATES={}", key_crate_versions(&lock));
}

/// `name=version;name=version` for the key crates found in Cargo.lock.
fn key_crate_versions(lock: &str) -> String {
    let mut found = Vec::new();
    let mut name: Option<&str> = None;
    for line in lock.lines() {
        if let Some(v) = line.strip_prefix("name = ") {
            name = Some(v.trim_matches('"'));
        } else if let Some(v) = line.strip_prefix("version = ") {
            if let Some(n) = name.take() {
                if KEY_CRATES.contains(&n) {
                    found.push(format!("{n}={}", v.trim_matches('"')));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found.join(";")
}
