//! A second "host": a network namespace joined to this one by a veth pair,
//! with its own address and host name. Workers of odd rank run there and
//! reach the coordinator over TCP at its veth address; the run must work as
//! on one host, count two hosts by digest, and name neither. Needs root and
//! iproute2; skipped with the reason on stderr otherwise, unless
//! `STAGEBENCH_TWO_HOSTS_REQUIRED` is set (`.ci/run` sets it where it made a
//! namespace itself), when a second host that cannot be made fails.

use harness::data::tiny;
use harness::run;
use harness::slurm::skip;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Set where a second host can be made: then not making it is a failure.
const REQUIRED: &str = "STAGEBENCH_TWO_HOSTS_REQUIRED";

/// Why the second host could not be made, as `ip` or the system said it.
#[derive(Debug)]
struct NoSecondHost(String);

impl std::fmt::Display for NoSecondHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A network namespace and veth pair, removed on drop.
struct SecondHost {
    ns: String,
    here: String,
    there: String,
}

fn ip(args: &[&str]) -> Result<(), NoSecondHost> {
    let out =
        Command::new("ip").args(args).output().map_err(|e| NoSecondHost(format!("ip: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(NoSecondHost(format!("ip {}: {}", args.join(" "), said.trim())))
    }
}

impl SecondHost {
    fn new() -> Result<SecondHost, NoSecondHost> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(NoSecondHost("network namespaces need root".into()));
        }
        let id = std::process::id();
        let net = 200 + id % 50;
        let host = SecondHost {
            ns: format!("sb{id}"),
            here: format!("10.{net}.{}.1", id % 250),
            there: format!("10.{net}.{}.2", id % 250),
        };
        let (a, b) = (format!("sb{id}a"), format!("sb{id}b"));
        ip(&["netns", "add", &host.ns])?;
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        ip(&["link", "set", &b, "netns", &host.ns])?;
        ip(&["addr", "add", &format!("{}/24", host.here), "dev", &a])?;
        ip(&["link", "set", &a, "up"])?;
        for args in [
            vec!["addr", "add", &format!("{}/24", host.there), "dev", &b],
            vec!["link", "set", &b, "up"],
            vec!["link", "set", "lo", "up"],
        ] {
            ip(&[&["-n", &host.ns][..], &args].concat())?;
        }
        Ok(host)
    }

    fn netns_path(&self) -> String {
        format!("/run/netns/{}", self.ns)
    }
}

impl Drop for SecondHost {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair with it.
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

#[test]
fn workers_on_a_second_host_connect_over_tcp_and_are_counted_not_named() {
    let host = match SecondHost::new() {
        Ok(h) => h,
        Err(reason) if std::env::var_os(REQUIRED).is_some() => {
            panic!("{REQUIRED} is set, but the second host could not be made: {reason}")
        }
        Err(reason) => {
            return skip(
                "workers_on_a_second_host_connect_over_tcp_and_are_counted_not_named",
                &reason.0,
            );
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    // Odd ranks start in the second namespace under another host name; exec
    // all the way down keeps the pid the coordinator launched.
    let wrapper = tmp.path().join("worker-on-two-hosts");
    let script = format!(
        "#!/bin/sh\nif [ $((STAGEBENCH_RANK % 2)) = 1 ]; then\n  exec unshare --uts sh -c 'hostname stagebench-second-host && exec nsenter --net={} {}'\nfi\nexec {}\n",
        host.netns_path(),
        harness::bins().worker.display(),
        harness::bins().worker.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = tmp.path().join("run");
    let mut c = harness::coordinator();
    c.arg("--output").arg(&out).arg("--worker-bin").arg(&wrapper);
    c.args(["--mode", "cold-prep", "--workers", "2", "--listen", &format!("{}:0", host.here)]);
    c.arg("--data").arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(
        f.stderr.contains(&format!("peer={}:", host.there)),
        "no connection came from the second host's address:\n{}",
        f.stderr
    );
    let r = harness::reports::read(&out);
    assert_eq!(r.hosts, 2, "{:?}", r.workers);
    assert_eq!(harness::reports::cold_prep(&r).caches_identical, Some(true));
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(!report.contains("stagebench-second-host"), "a host name in the report");
    f.assert_no_worker_left();
}
