//! What a worker's first frame must carry to be admitted: the coordinator's
//! protocol version, the run's token, the coordinator's own build, and, for
//! a worker the coordinator spawned itself, that worker's pid. A pure
//! check, so the fuzzer drives it with every [`Hello`] it can decode.

use crate::{Hello, PROTOCOL_VERSION, Token};

/// Why a handshake was refused; logged, counted, and sent to the worker.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("protocol version {0} does not match the coordinator's {PROTOCOL_VERSION}")]
    Version(u32),
    #[error("wrong token: this worker was not launched for this run")]
    Token,
    #[error("worker build {0} differs from the coordinator's build {build}", build = short(crate::program::SOURCE_SHA256))]
    Build(String),
    #[error("pid {got} is not the launched worker's pid {expected}")]
    Pid { got: u32, expected: u32 },
}

/// Admits `hello` for a run holding `token` whose coordinator was built as
/// `build`; `expected_pid` is the pid of the worker it spawned for that
/// rank, where it knows one.
pub fn check(
    hello: &Hello,
    token: &Token,
    build: &str,
    expected_pid: Option<u32>,
) -> Result<(), Refused> {
    if hello.protocol_version != PROTOCOL_VERSION {
        return Err(Refused::Version(hello.protocol_version));
    }
    if !hello.token.matches(token) {
        return Err(Refused::Token);
    }
    if hello.build_fingerprint != build {
        return Err(Refused::Build(short(&hello.build_fingerprint).to_string()));
    }
    match expected_pid {
        Some(expected) if expected != hello.pid => Err(Refused::Pid { got: hello.pid, expected }),
        _ => Ok(()),
    }
}

/// A build fingerprint's first 12 bytes (fewer where a character would be
/// cut), for a line of text.
fn short(fingerprint: &str) -> &str {
    let mut end = fingerprint.len().min(12);
    while !fingerprint.is_char_boundary(end) {
        end -= 1;
    }
    &fingerprint[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkerId;

    fn hello() -> Hello {
        Hello {
            protocol_version: PROTOCOL_VERSION,
            worker_version: "0.1.0".into(),
            build_fingerprint: "ab".repeat(32),
            pid: 42,
            rank: WorkerId(1),
            token: Token([7; 32]),
            host_sha256: String::new(),
        }
    }

    #[test]
    fn each_field_is_checked_and_named() {
        let (token, build) = (Token([7; 32]), "ab".repeat(32));
        let ok = hello();
        assert_eq!(check(&ok, &token, &build, Some(42)), Ok(()));
        assert_eq!(check(&ok, &token, &build, None), Ok(()));
        let v = Hello { protocol_version: PROTOCOL_VERSION + 1, ..hello() };
        assert_eq!(check(&v, &token, &build, None), Err(Refused::Version(PROTOCOL_VERSION + 1)));
        let t = Hello { token: Token([8; 32]), ..hello() };
        assert_eq!(check(&t, &token, &build, None), Err(Refused::Token));
        let b = Hello { build_fingerprint: "cd".repeat(32), ..hello() };
        assert_eq!(check(&b, &token, &build, None), Err(Refused::Build("cdcdcdcdcdcd".into())));
        assert_eq!(
            check(&ok, &token, &build, Some(43)),
            Err(Refused::Pid { got: 42, expected: 43 })
        );
    }

    /// A peer's fingerprint is any UTF-8 it sends: shortening it for the
    /// log line must not cut a character (found by reading `short`; the
    /// fuzzers rarely make a valid multi-byte character at byte 12).
    #[test]
    fn a_fingerprint_with_a_character_across_byte_12_is_refused_not_a_panic() {
        let (token, build) = (Token([7; 32]), "ab".repeat(32));
        let b = Hello { build_fingerprint: "a€€€€€".into(), ..hello() };
        let refused = check(&b, &token, &build, None).unwrap_err();
        assert_eq!(refused, Refused::Build("a€€€".into()));
        assert!(refused.to_string().starts_with("worker build a€€€ differs"), "{refused}");
    }
}
