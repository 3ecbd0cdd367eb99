//! A worker that misbehaves in the way `STAGEBENCH_FAKE` names, for tests.
//! It is launched by the real coordinator (via --worker-bin) exactly like a
//! real worker and reads the same environment.

use protocol::frame;
use protocol::stream::{Endpoint, Stream};
use protocol::{FromWorker, Hello, JobId, PROTOCOL_VERSION, ToWorker, Token, WorkerId};
use std::io::{Read, Write};

/// The coordinator's socket or TCP listener, as a real worker reaches it.
fn connect() -> Stream {
    let endpoint = Endpoint::from_env().expect("a socket or address");
    Stream::connect(&endpoint).expect("connect")
}

fn main() {
    let mode = std::env::var("STAGEBENCH_FAKE").unwrap_or_default();
    let token = Token::from_hex(&std::env::var(protocol::env::TOKEN).expect("token")).unwrap();
    let rank = WorkerId(std::env::var(protocol::env::RANK).expect("rank").parse().unwrap());
    let hello = |token: Token, version: u32| {
        FromWorker::Hello(Hello {
            protocol_version: version,
            worker_version: "fake".into(),
            build_fingerprint: protocol::program::SOURCE_SHA256.into(),
            pid: std::process::id(),
            rank,
            host_sha256: protocol::host_sha256(&token, "fake-host"),
            token,
        })
    };
    let mut s = connect();
    match mode.as_str() {
        "wrong-version" => {
            frame::write(&mut s, &hello(token, PROTOCOL_VERSION + 1)).unwrap();
            report_reply(&mut s);
        }
        "wrong-token" => {
            let mut bad = token.clone();
            bad.0[0] ^= 0xff;
            frame::write(&mut s, &hello(bad, PROTOCOL_VERSION)).unwrap();
            report_reply(&mut s);
        }
        "garbage-first" => {
            s.write_all(&[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap();
            report_reply(&mut s);
        }
        "flood" => {
            // Holds 300 more connections open, silent, as a hostile client
            // would, beyond the coordinator's descriptor limit (this process
            // first raises its own, which it inherited).
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: plain get/setrlimit on this process.
            unsafe {
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
                lim.rlim_cur = lim.rlim_max.min(4096);
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
            let _held: Vec<Stream> = (0..300)
                .filter_map(|_| Stream::connect(&Endpoint::from_env().unwrap()).ok())
                .collect();
            block_until_closed(&mut s);
        }
        "silent" => {
            // Connects and never says hello; waits until the coordinator hangs up.
            block_until_closed(&mut s);
        }
        "duplicate" => {
            frame::write(&mut s, &hello(token.clone(), PROTOCOL_VERSION)).unwrap();
            let _: ToWorker = frame::read(&mut s).unwrap();
            let mut second = connect();
            frame::write(&mut second, &hello(token, PROTOCOL_VERSION)).unwrap();
            report_reply(&mut second);
        }
        "oversized" | "garbage" | "truncated" | "misreport" => {
            frame::write(&mut s, &hello(token, PROTOCOL_VERSION)).unwrap();
            let run_dir = match frame::read(&mut s).unwrap() {
                ToWorker::Welcome { run_dir } => run_dir,
                other => panic!("expected Welcome, got {other:?}"),
            };
            let assign: ToWorker = frame::read(&mut s).unwrap();
            let job = match assign {
                ToWorker::Assign { job, .. } => job,
                _ => JobId(0),
            };
            match mode.as_str() {
                "oversized" => s.write_all(&u32::MAX.to_be_bytes()).unwrap(),
                "garbage" => {
                    s.write_all(&[0, 0, 0, 6, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee]).unwrap()
                }
                "truncated" => {
                    s.write_all(&[0, 0, 0, 100, 1, 2, 3]).unwrap();
                    s.shutdown_write().unwrap();
                }
                _ => {
                    // Claims an artifact that does not match what is on disk.
                    let msg = FromWorker::Artifact {
                        job,
                        path: "artifacts/claimed.bin".into(),
                        sha256: [0; 32],
                    };
                    frame::write(&mut s, &msg).unwrap();
                    let _ = std::fs::create_dir_all(format!("{run_dir}/artifacts"));
                    let _ = std::fs::write(format!("{run_dir}/artifacts/claimed.bin"), b"real");
                    let done = FromWorker::Measurement { job, measurement: Default::default() };
                    frame::write(&mut s, &done).unwrap();
                    let _: Result<ToWorker, _> = frame::read(&mut s);
                    return;
                }
            }
            block_until_closed(&mut s);
        }
        "instant" => {
            // Answers every job at once with an empty measurement, and a
            // preparation's close likewise: the coordinator's own cost per
            // job, with no work behind it (scripts/bench-dispatch.py).
            //
            // With `STAGEBENCH_FAKE_PIDS=DIR` it first writes a file named by
            // its pid there; with `STAGEBENCH_FAKE_KILLED=RANK:K` the worker of
            // that rank writes the id of its K-th job's item to DIR/killed and
            // kills itself (SIGKILL) on that job, as a process killed from
            // outside mid-phase. With `RANK:K:handover` it dies as the job
            // after the K-th is handed over: it takes the K-th, refuses all
            // further frames, answers the one before and dies, so the
            // coordinator's next hand-over, not its wait for an answer, is
            // what finds it gone (the two orders a real death can take).
            let pids = std::env::var_os("STAGEBENCH_FAKE_PIDS").map(std::path::PathBuf::from);
            if let Some(dir) = &pids {
                std::fs::write(dir.join(std::process::id().to_string()), b"").unwrap();
            }
            let killed = std::env::var("STAGEBENCH_FAKE_KILLED").ok().and_then(|v| {
                let mut parts = v.split(':');
                let r = parts.next()?.parse::<u32>().ok()?;
                let k = parts.next()?.parse::<u64>().ok()?;
                let handover = parts.next() == Some("handover");
                (r == rank.0).then_some((k, handover))
            });
            let die = |stage: &protocol::Stage| {
                if let Some(dir) = &pids {
                    let id = match stage {
                        protocol::Stage::PrepareItem { id, .. } => id.as_str(),
                        _ => "",
                    };
                    std::fs::write(dir.join("killed"), id).unwrap();
                }
                // SAFETY: signals this process itself.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            };
            frame::write(&mut s, &hello(token, PROTOCOL_VERSION)).unwrap();
            let _welcome: ToWorker = frame::read(&mut s).unwrap();
            let mut jobs = 0;
            loop {
                let reply = match frame::read::<_, ToWorker>(&mut s) {
                    Ok(ToWorker::Assign { job, stage, .. }) => {
                        jobs += 1;
                        match killed {
                            Some((k, false)) if jobs == k => die(&stage),
                            Some((k, true)) if jobs + 1 == k => {
                                // The K-th job is on the socket already: the
                                // coordinator hands a job over before it waits
                                // for the answer to the one before.
                                let Ok(ToWorker::Assign { stage: held, .. }) = frame::read(&mut s)
                                else {
                                    panic!("no job held behind job {jobs}")
                                };
                                let Stream::Unix(u) = &s else {
                                    panic!("handover needs a Unix socket")
                                };
                                // The coordinator's next write now fails (EPIPE).
                                u.shutdown(std::net::Shutdown::Read).unwrap();
                                let reply = FromWorker::Measurement {
                                    job,
                                    measurement: Default::default(),
                                };
                                frame::write(&mut s, &reply).unwrap();
                                die(&held);
                            }
                            _ => {}
                        }
                        FromWorker::Measurement { job, measurement: Default::default() }
                    }
                    Ok(ToWorker::Finish) => FromWorker::Finished {
                        measurement: Default::default(),
                        error: None,
                        artifacts: Vec::new(),
                        beside: None,
                    },
                    _ => return,
                };
                frame::write(&mut s, &reply).unwrap();
            }
        }
        other => panic!("unknown STAGEBENCH_FAKE mode '{other}'"),
    }
}

/// Prints the coordinator's reply (a refusal) and exits with the worker's refused code.
fn report_reply(s: &mut Stream) {
    match frame::read::<_, ToWorker>(s) {
        Ok(ToWorker::Refused { reason }) => {
            eprintln!("fake worker: refused: {reason}");
            std::process::exit(protocol::exit::worker::REFUSED as i32);
        }
        other => {
            eprintln!("fake worker: reply {other:?}");
            std::process::exit(9);
        }
    }
}

fn block_until_closed(s: &mut Stream) {
    let mut buf = [0u8; 64];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}
