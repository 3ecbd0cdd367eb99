//! One of every message each way, valid: what the frame tests pin and
//! round-trip, and where the fuzzers start (feature `fuzzing`, and this
//! crate's own tests).

use crate::{
    Beside, Faults, Figure, FromWorker, Hello, Io, JobId, KillPoint, Measurement, PROTOCOL_VERSION,
    Runtime, SampleRequest, Slice, SpanTarget, Stage, ToWorker, Token, TreeUsage, WorkerId,
    Written,
};

/// A command's stage as a measurement carries it.
fn protocol_stage() -> crate::CommandStage {
    crate::CommandStage {
        name: "fit".into(),
        start_s: 3.9,
        wall_s: 16.1,
        user_s: 17.0,
        sys_s: 0.4,
        rss_start_bytes: 321 << 20,
        rss_end_bytes: 430 << 20,
        peak_rss_bytes: 436 << 20,
        peak_reset: true,
    }
}

/// The token and build the fuzzed handshakes are checked against.
pub const TOKEN: Token = Token([7u8; 32]);
pub const BUILD: &str = "abababababababababababababababababababababababababababababababab";

/// A handshake that is admitted (with `TOKEN` and the fuzz build).
pub fn hello() -> Hello {
    Hello {
        protocol_version: PROTOCOL_VERSION,
        worker_version: "0.1.0".into(),
        build_fingerprint: BUILD.into(),
        pid: 4242,
        rank: WorkerId(3),
        token: TOKEN,
        host_sha256: "cd".repeat(32),
    }
}

/// One of every message each way, with every optional part present somewhere.
pub fn every_message() -> (Vec<FromWorker>, Vec<ToWorker>) {
    let from = vec![
        FromWorker::Hello(hello()),
        FromWorker::Progress { job: JobId(1), done: 3, total: 9 },
        FromWorker::Artifact { job: JobId(1), path: "artifacts/a.bin".into(), sha256: [9; 32] },
        FromWorker::Measurement {
            job: JobId(1),
            measurement: Measurement {
                wall_ns: 1,
                user_ns: 2,
                sys_ns: 3,
                peak_rss_bytes: 4,
                figures: vec![Figure { name: "x".into(), value: 0.5 }],
                tree: TreeUsage {
                    peak_bytes: 5,
                    method: "sampled".into(),
                    sample_ms: 10,
                    sum_of_peaks_bytes: 6,
                    leaked: vec!["sleep".into()],
                    anon_bytes: Some(3),
                    file_bytes: None,
                },
                faults: Faults {
                    minor: 7,
                    major: 0,
                    voluntary_switches: 2,
                    involuntary_switches: 1,
                },
                slices: vec![Slice { name: "load".into(), start_ns: 5, dur_ns: 9, beside: false }],
                spans_not_found: vec!["json:nope".into()],
                spans: vec![crate::SpanSummary {
                    name: "load".into(),
                    calls: 2,
                    sum_s: 0.5,
                    self_s: 0.4,
                    concurrent_s: 0.1,
                    min_s: 0.2,
                    max_s: 0.3,
                    first_s: 0.3,
                    first_at: 7.0,
                    buckets: vec![(1500, 2)],
                    cpu_s: Some(0.45),
                }],
                span_warnings: vec!["--span json:dumps was wrapped but never called".into()],
                command_stages: vec![protocol_stage()],
                io: Some(Io {
                    method: "procfs".into(),
                    read_bytes: 4096,
                    write_bytes: 0,
                    rchar: 5000,
                    wchar: 12,
                    syscr: 3,
                    syscw: 1,
                }),
                runtime: Runtime {
                    threads: vec![("OMP_NUM_THREADS".into(), "4".into())],
                    git_commit: Some("0123abcd".into()),
                    git_dirty: Some(true),
                    python: Some("3.11.2".into()),
                    distributions: vec![("numpy".into(), "1.26.4".into())],
                    devices: vec!["jax:cpu".into()],
                    sources: vec![("__main__".into(), "ab".repeat(32))],
                },
            },
        },
        FromWorker::StageFailed {
            job: JobId(2),
            error: "boom".into(),
            slices: vec![],
            stderr_tail: Some("Traceback (most recent call last):\n".into()),
        },
        FromWorker::KilledAtPoint {
            job: JobId(2),
            at: "after 1.0 s".into(),
            slices: vec![Slice { name: "fit".into(), start_ns: 5, dur_ns: 7, beside: false }],
        },
        FromWorker::Finished {
            measurement: Measurement { wall_ns: 9, ..Measurement::default() },
            error: Some("exited with status 3".into()),
            artifacts: vec![Written {
                path: "samples/items-job-4-prepare_item.folded".into(),
                sha256: [7; 32],
            }],
            beside: Some(Beside {
                user_ns: 11,
                sys_ns: 12,
                faults: Faults {
                    minor: 1,
                    major: 0,
                    voluntary_switches: 2,
                    involuntary_switches: 3,
                },
            }),
        },
    ];
    let to = vec![
        ToWorker::Welcome { run_dir: "/tmp/run".into() },
        ToWorker::Refused { reason: "token mismatch".into() },
        ToWorker::Assign {
            job: JobId(5),
            stage: Stage::Sleep { ms: 200 },
            kill: None,
            spans: vec![],
            sample: None,
        },
        ToWorker::Assign {
            job: JobId(6),
            stage: Stage::Noop,
            kill: Some(KillPoint::Span { name: "fit".into(), n: 2 }),
            spans: vec![
                SpanTarget::Function {
                    module: "json".into(),
                    qualname: "JSONDecoder.decode".into(),
                    name: "decode".into(),
                },
                SpanTarget::Preset("torch".into()),
                SpanTarget::Stage {
                    module: "__main__".into(),
                    qualname: "fit".into(),
                    name: "fit".into(),
                },
            ],
            sample: Some(SampleRequest { rate_hz: 100, py_spy: "/usr/bin/py-spy".into() }),
        },
        ToWorker::Assign {
            job: JobId(7),
            stage: Stage::Noop,
            kill: Some(KillPoint::After(1.5)),
            spans: vec![],
            sample: None,
        },
        ToWorker::Assign {
            job: JobId(8),
            stage: Stage::Noop,
            kill: Some(KillPoint::Progress(0.5)),
            spans: vec![],
            sample: None,
        },
        ToWorker::Shutdown,
        ToWorker::Finish,
    ];
    (from, to)
}
