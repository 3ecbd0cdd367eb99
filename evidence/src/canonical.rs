//! Canonical JSON bytes and SHA-256.
//!
//! Canonical form: object keys sorted recursively, pretty-printed with two
//! spaces, one trailing newline. Every evidence file is written in this form
//! and every digest is taken over it, so `verify` can re-derive the exact
//! bytes from the parsed value: an edit that leaves the value unchanged
//! (whitespace, key order, number spelling) is caught as non-canonical, and
//! one that changes a value is caught by the digest.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical bytes of any serialisable value (a [`Value`] already in
/// hand goes to [`value_bytes`], which does not copy it).
pub fn to_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    value_bytes(&serde_json::to_value(value).expect("evidence types serialise to JSON"))
}

/// Canonical bytes of a JSON value. Its objects are serde_json's `Map`,
/// a `BTreeMap` in this workspace (the `preserve_order` feature is off, and
/// `maps_keep_their_keys_sorted` fails if anything turns it on): keys come
/// out sorted at every depth with no sorting pass and no copy, which
/// matters for a report of 100,000 items.
pub fn value_bytes(value: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).expect("a JSON value serialises");
    out.push(b'\n');
    out
}

/// Lowercase hex SHA-256 of the canonical bytes of an array of `items`
/// ([`value_bytes`] of `Value::Array`), each item made a JSON value only in
/// its turn and dropped after: the same digest without the array in memory
/// (a phase's definition lists every one of its 10⁶ items).
pub fn array_sha256<T: Serialize>(items: impl IntoIterator<Item = T>) -> String {
    /// The items as a JSON array, serialised once, in order.
    struct Items<I>(std::cell::Cell<Option<I>>);
    impl<I: Iterator<Item = T>, T: Serialize> Serialize for Items<I> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let items = self.0.take().into_iter().flatten();
            // Each through a `Value`, as `to_bytes` does: its keys sorted.
            s.collect_seq(items.map(|i| serde_json::to_value(i).expect("evidence serialises")))
        }
    }
    /// Bytes written into the digest, none kept.
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.update(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hashing(Sha256::new());
    let items = Items(std::cell::Cell::new(Some(items.into_iter())));
    serde_json::to_writer_pretty(&mut h, &items).expect("a JSON array serialises");
    h.0.update(b"\n");
    hex::encode(h.0.finalize())
}

/// Lowercase hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 of bytes given in pieces, as lowercase hex at the end.
#[derive(Default)]
pub struct Sha256Hex(Sha256);

impl Sha256Hex {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// SHA-256 (hex) of a file, read in chunks.
pub fn file_sha256(path: &std::path::Path) -> std::io::Result<(String, u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256Hex::default();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        n += k as u64;
        h.update(&buf[..k]);
    }
    Ok((h.finish(), n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth() {
        // Built from a struct whose fields are out of order, so the order
        // comes from canonicalisation, not from how serde_json stores maps.
        #[derive(serde::Serialize)]
        struct Inner {
            z: u8,
            y: u8,
        }
        #[derive(serde::Serialize)]
        struct Outer {
            b: u8,
            a: Vec<Inner>,
            c: f64,
        }
        let v = Outer { b: 1, a: vec![Inner { z: 1, y: 2 }], c: 0.5 };
        let pinned = "{\n  \"a\": [\n    {\n      \"y\": 2,\n      \"z\": 1\n    }\n  ],\n  \"b\": 1,\n  \"c\": 0.5\n}\n";
        assert_eq!(String::from_utf8(to_bytes(&v)).unwrap(), pinned);
    }

    /// Floats must survive parse → print exactly (serde_json's
    /// `float_roundtrip`), or verify would call an untouched report edited.
    #[test]
    fn floats_survive_a_round_trip() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if !f.is_finite() {
                continue;
            }
            let g = (x >> 11) as f64 / 1e9;
            let v = json!({ "f": f, "g": g });
            let once = to_bytes(&v);
            let parsed: Value = serde_json::from_slice(&once).unwrap();
            assert_eq!(to_bytes(&parsed), once, "{v}");
            // The very bits come back, not a nearby value that prints alike.
            assert_eq!(parsed["f"].as_f64().unwrap().to_bits(), f.to_bits(), "{f:e}");
            assert_eq!(parsed["g"].as_f64().unwrap().to_bits(), g.to_bits(), "{g:e}");
        }
        let v = json!({ "f": 0.6789708240000001 });
        assert_eq!(
            to_bytes(&serde_json::from_slice::<Value>(&to_bytes(&v)).unwrap()),
            to_bytes(&v)
        );
    }

    /// An array hashed item by item is the array's canonical bytes hashed:
    /// empty, of scalars, of objects with unsorted fields and nested arrays.
    #[test]
    fn an_array_hashed_in_turn_is_the_whole_arrays_digest() {
        #[derive(serde::Serialize, Clone)]
        struct Item {
            z: Vec<u8>,
            a: Option<String>,
        }
        let items = vec![
            Item { z: vec![1, 2], a: None },
            Item { z: vec![], a: Some("x\n\"y".into()) },
            Item { z: vec![3], a: Some(String::new()) },
        ];
        let whole = |v: &Value| sha256_hex(&value_bytes(v));
        assert_eq!(array_sha256(items.iter()), whole(&json!(items)));
        assert_eq!(array_sha256(Vec::<Item>::new()), whole(&json!([])));
        assert_eq!(array_sha256([1.5, 2.0]), whole(&json!([1.5, 2.0])));
        assert_eq!(array_sha256([json!([[], {}])]), whole(&json!([[[], {}]])));
        assert_ne!(array_sha256(items.iter().take(2)), whole(&json!(items)));
    }

    /// What `value_bytes` relies on: a serde_json object iterates in key
    /// order, however it was filled (no `preserve_order` feature).
    #[test]
    fn maps_keep_their_keys_sorted() {
        let mut m = serde_json::Map::new();
        for k in ["b", "c", "a"] {
            m.insert(k.into(), Value::Null);
        }
        assert_eq!(m.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn canonical_form_is_a_fixed_point() {
        let v = json!({"x": [1.0, 2.5e-7, -0.0], "w": "t\u{e9}xt", "n": null});
        let once = to_bytes(&v);
        let parsed: Value = serde_json::from_slice(&once).unwrap();
        assert_eq!(to_bytes(&parsed), once);
    }
}
