//! Length-prefixed bincode frames.
//!
//! A frame is a 4-byte big-endian payload length followed by that many bytes
//! of bincode (standard config, decode limit [`MAX_FRAME_BYTES`]). A length
//! above the limit is refused before anything is allocated, so a peer can
//! never make us allocate a size it chose. Every failure is a [`FrameError`],
//! never a panic.

use serde::{Serialize, de::DeserializeOwned};
use std::io::{self, Read, Write};

/// Largest payload either side accepts. Messages carry references to
/// artifacts, never their contents, so real frames are a few hundred bytes.
pub const MAX_FRAME_BYTES: usize = 1 << 20;

const HEADER_BYTES: usize = 4;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME_BYTES>()
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection cleanly between frames.
    #[error("connection closed")]
    Closed,
    #[error("truncated frame: expected {expected} bytes, connection ended after {got}")]
    Truncated { expected: usize, got: usize },
    #[error("oversized frame: {len} bytes announced, the limit is {max}")]
    Oversized { len: usize, max: usize },
    #[error("undecodable frame: {0}")]
    Decode(String),
    #[error("could not encode frame: {0}")]
    Encode(String),
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
}

/// Encodes `msg` as one complete frame (header and payload).
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let payload = bincode::serde::encode_to_vec(msg, config())
        .map_err(|e| FrameError::Encode(e.to_string()))?;
    if payload.len() > MAX_FRAME_BYTES {
        return Err(FrameError::Oversized { len: payload.len(), max: MAX_FRAME_BYTES });
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Checks a header read of `got` bytes; returns the announced payload
/// length if it is complete and within the limit.
fn payload_len(header: [u8; HEADER_BYTES], got: usize) -> Result<usize, FrameError> {
    match got {
        0 => return Err(FrameError::Closed),
        n if n < HEADER_BYTES => {
            return Err(FrameError::Truncated { expected: HEADER_BYTES, got: n });
        }
        _ => {}
    }
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::Oversized { len, max: MAX_FRAME_BYTES });
    }
    if len == 0 {
        return Err(FrameError::Decode("empty payload".into()));
    }
    Ok(len)
}

/// Decodes a payload read of `got` bytes, insisting that it is complete and
/// that every byte belongs to the message.
fn decode_payload<T: DeserializeOwned>(payload: &[u8], got: usize) -> Result<T, FrameError> {
    if got < payload.len() {
        return Err(FrameError::Truncated { expected: payload.len(), got });
    }
    let (msg, used) = bincode::serde::decode_from_slice(payload, config())
        .map_err(|e| FrameError::Decode(e.to_string()))?;
    if used != payload.len() {
        return Err(FrameError::Decode(format!(
            "{} trailing bytes after the message",
            payload.len() - used
        )));
    }
    Ok(msg)
}

/// Writes one frame and flushes.
pub fn write<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    w.write_all(&encode(msg)?)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame. A clean end of stream before the header is [`FrameError::Closed`].
pub fn read<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, FrameError> {
    let mut header = [0u8; HEADER_BYTES];
    let got = fill(r, &mut header)?;
    let mut payload = vec![0u8; payload_len(header, got)?];
    let got = fill(r, &mut payload)?;
    decode_payload(&payload, got)
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn fill<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Async twins of [`read()`] and [`write()`] for tokio streams.
#[cfg(feature = "tokio")]
pub mod nonblocking {
    use super::*;
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    /// Writes one frame and flushes.
    pub async fn write<W: AsyncWrite + Unpin, T: Serialize>(
        w: &mut W,
        msg: &T,
    ) -> Result<(), FrameError> {
        w.write_all(&encode(msg)?).await?;
        w.flush().await?;
        Ok(())
    }

    /// Reads one frame. Not cancel-safe: run it in a task that owns the reader.
    pub async fn read<R: AsyncRead + Unpin, T: DeserializeOwned>(
        r: &mut R,
    ) -> Result<T, FrameError> {
        let mut header = [0u8; HEADER_BYTES];
        let got = fill(r, &mut header).await?;
        let mut payload = vec![0u8; payload_len(header, got)?];
        let got = fill(r, &mut payload).await?;
        decode_payload(&payload, got)
    }

    async fn fill<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match r.read(&mut buf[got..]).await? {
                0 => break,
                n => got += n,
            }
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Faults, FromWorker, JobId, Measurement, Slice, Stage, ToWorker, Token, TreeUsage};
    use std::io::Cursor;

    use crate::examples::every_message;

    fn hello() -> FromWorker {
        FromWorker::Hello(crate::examples::hello())
    }

    #[test]
    fn every_message_round_trips_through_a_buffer() {
        let (from, to) = every_message();
        let mut buf = Vec::new();
        for m in &from {
            write(&mut buf, m).unwrap();
        }
        for m in &to {
            write(&mut buf, m).unwrap();
        }
        let mut r = Cursor::new(buf);
        for m in &from {
            assert_eq!(&read::<_, FromWorker>(&mut r).unwrap(), m);
        }
        for m in &to {
            assert_eq!(&read::<_, ToWorker>(&mut r).unwrap(), m);
        }
        assert!(matches!(read::<_, ToWorker>(&mut r), Err(FrameError::Closed)));
    }

    /// The wire form of each message, pinned: any change to it shows up here
    /// and must come with a PROTOCOL_VERSION bump.
    #[test]
    fn wire_form_is_pinned() {
        let assign = encode(&ToWorker::Assign {
            job: JobId(5),
            stage: Stage::Sleep { ms: 200 },
            kill: None,
            spans: vec![],
            sample: None,
        })
        .unwrap();
        // Assign = variant 2, job 5, Stage::Sleep = variant 1, 200 as a
        // one-byte varint, no kill point, no spans, no sampling.
        assert_eq!(hex(&assign), "00000007020501c8000000");
        let progress = encode(&FromWorker::Progress { job: JobId(1), done: 3, total: 9 }).unwrap();
        assert_eq!(hex(&progress), "0000000401010309");
        let shutdown = encode(&ToWorker::Shutdown).unwrap();
        assert_eq!(hex(&shutdown), "0000000103");
        // Measurement = variant 3, job 1, wall 2, user 3, sys 4, peak 5, no
        // figures, then the tree: peak 6, method "s", sample 10 ms, sum 7,
        // one leaked name "x", anon Some(8), file None; faults 9, 10, 11, 12;
        // one slice "a" from 13 ns for 14 ns.
        let tree = TreeUsage {
            peak_bytes: 6,
            method: "s".into(),
            sample_ms: 10,
            sum_of_peaks_bytes: 7,
            leaked: vec!["x".into()],
            anon_bytes: Some(8),
            file_bytes: None,
        };
        let measurement = Measurement {
            wall_ns: 2,
            user_ns: 3,
            sys_ns: 4,
            peak_rss_bytes: 5,
            figures: Vec::new(),
            tree,
            faults: Faults {
                minor: 9,
                major: 10,
                voluntary_switches: 11,
                involuntary_switches: 12,
            },
            slices: vec![Slice { name: "a".into(), start_ns: 13, dur_ns: 14, beside: false }],
            spans_not_found: vec!["m:f".into()],
            spans: Vec::new(),
            span_warnings: Vec::new(),
            command_stages: Vec::new(),
            io: None,
            runtime: crate::Runtime::default(),
        };
        let m = encode(&FromWorker::Measurement { job: JobId(1), measurement }).unwrap();
        // … then the slice's `beside` (0), one span not found, "m:f", no span summary, warning or
        // command stage, no
        // I/O, and an empty runtime
        // (no thread settings, commit, dirty flag, Python, distributions,
        // devices or sources).
        assert_eq!(
            hex(&m),
            "0000002c030102030405000601730a07010178010800090a0b0c0101610d0e0001036d3a660000000000000000000000"
        );
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn oversized_header_is_refused_without_allocating() {
        let mut r = Cursor::new(vec![0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
        match read::<_, FromWorker>(&mut r) {
            Err(FrameError::Oversized { len, max }) => {
                assert_eq!(len, u32::MAX as usize);
                assert_eq!(max, MAX_FRAME_BYTES);
            }
            other => panic!("expected Oversized, got {other:?}"),
        }
    }

    #[test]
    fn truncated_header_and_payload_are_named() {
        let mut r = Cursor::new(vec![0, 0]);
        assert!(matches!(
            read::<_, FromWorker>(&mut r),
            Err(FrameError::Truncated { expected: 4, got: 2 })
        ));
        let mut full = encode(&hello()).unwrap();
        let cut = full.len() - 3;
        full.truncate(cut);
        let mut r = Cursor::new(full);
        assert!(matches!(read::<_, FromWorker>(&mut r), Err(FrameError::Truncated { .. })));
    }

    #[test]
    fn garbage_payload_is_a_decode_error() {
        let mut bytes = vec![0, 0, 0, 8];
        bytes.extend_from_slice(&[0xff; 8]);
        let mut r = Cursor::new(bytes);
        assert!(matches!(read::<_, FromWorker>(&mut r), Err(FrameError::Decode(_))));
    }

    #[test]
    fn empty_payload_and_trailing_bytes_are_decode_errors() {
        let mut r = Cursor::new(vec![0, 0, 0, 0]);
        assert!(matches!(read::<_, ToWorker>(&mut r), Err(FrameError::Decode(_))));
        let mut frame = encode(&ToWorker::Shutdown).unwrap();
        frame[3] += 1;
        frame.push(0);
        let mut r = Cursor::new(frame);
        assert!(matches!(read::<_, ToWorker>(&mut r), Err(FrameError::Decode(_))));
    }

    /// A short frame that claims a huge string inside must fail on the limit,
    /// not allocate what it claims.
    #[test]
    fn inner_length_claims_are_bounded() {
        // Variant 1 (Refused), then a varint string length of u64::MAX.
        let payload = [1u8, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        let mut bytes = (payload.len() as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(&payload);
        let mut r = Cursor::new(bytes);
        assert!(matches!(read::<_, ToWorker>(&mut r), Err(FrameError::Decode(_))));
    }

    #[test]
    fn token_hex_round_trips_and_compares() {
        let t = Token([0xa5; 32]);
        let back = Token::from_hex(&t.to_hex()).unwrap();
        assert!(t.matches(&back));
        let mut other = t.clone();
        other.0[31] ^= 1;
        assert!(!t.matches(&other));
        assert!(Token::from_hex("abc").is_none());
        assert!(Token::from_hex(&"zz".repeat(32)).is_none());
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
    }
}
