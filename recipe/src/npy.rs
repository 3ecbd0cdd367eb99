//! `.npy` files of the cache, through ndarray-npy: float32 `[frames, 5]`
//! and bool `[frames]`, little-endian, C order.
//!
//! ndarray-npy writes their data, and checks and views (or reads) their
//! data: dtype, length, alignment, and a bool's every byte. Two things it
//! does not do, which this module does:
//! - write the header byte for byte as NumPy does. ndarray-npy ends the
//!   header's dictionary with `)}` where NumPy writes `), }`, and pads a
//!   header that is already a multiple of 64 bytes by 64 more where NumPy
//!   adds none. Either would change every cache file's SHA-256, and with it
//!   every cache manifest, so runs made before and after could no longer be
//!   compared (docs/feature-contract.md; pinned by a test below);
//! - read a header quickly. ndarray-npy parses it with a general Python
//!   literal parser, 20 µs a file here, which made the normalizer and the
//!   loader epoch 5-14% slower (two files a series, read in every warm
//!   stage). [`view_f32_2d`] and [`view_bool_1d`] read the header this module
//!   writes (and NumPy writes) directly, and hand the data to ndarray-npy.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, CowArray, Ix1, Ix2};
use ndarray_npy::{ReadNpyExt, ViewDataError, ViewElement, WritableElement};
use py_literal::Value as PyValue;
use std::io;

/// The header NumPy 2 writes (format 1.0): the dictionary with a trailing
/// `, `, padded with spaces to a multiple of 64 bytes, then `\n`.
fn header(descr: &str, shape: &str) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + header length (2) + dict + padding + '\n', a multiple of 64.
    let unpadded = 10 + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let mut h = Vec::with_capacity(unpadded + pad);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.extend(std::iter::repeat_n(b' ', pad));
    h.push(b'\n');
    h
}

/// The header, then the elements as ndarray-npy writes them.
fn with_header<A: WritableElement>(header: Vec<u8>, elements: &[A]) -> Vec<u8> {
    let mut out = header;
    out.reserve(std::mem::size_of_val(elements));
    A::write_slice(elements, &mut out).expect("writing into memory cannot fail");
    out
}

/// `.npy` bytes of a float32 `[rows, cols]` array.
pub fn f32_2d(values: ArrayView2<'_, f32>) -> Vec<u8> {
    let (rows, cols) = values.dim();
    let values = values.as_standard_layout();
    let data = values.as_slice().expect("a standard-layout array is one slice");
    with_header(header("<f4", &format!("({rows}, {cols})")), data)
}

/// `.npy` bytes of a bool `[rows]` array.
pub fn bool_1d(values: ArrayView1<'_, bool>) -> Vec<u8> {
    let values = values.as_standard_layout();
    let data = values.as_slice().expect("a standard-layout array is one slice");
    with_header(header("|b1", &format!("({},)", values.len())), data)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("not a cache .npy: {e}"))
}

/// Parses a float32 `[rows, cols]` array.
pub fn read_f32_2d(bytes: &[u8]) -> io::Result<Array2<f32>> {
    Array2::<f32>::read_npy(bytes).map_err(invalid)
}

/// Parses a bool `[rows]` array.
pub fn read_bool_1d(bytes: &[u8]) -> io::Result<Array1<bool>> {
    Array1::<bool>::read_npy(bytes).map_err(invalid)
}

/// The data section and shape of a format 1.0, C-order `.npy` of dtype
/// `descr`, from its header.
fn split<'a>(bytes: &'a [u8], descr: &str) -> io::Result<(&'a [u8], Vec<usize>)> {
    if bytes.len() < 10 || &bytes[..8] != b"\x93NUMPY\x01\x00" {
        return Err(invalid("bad magic or version"));
    }
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let dict = bytes.get(10..10 + hlen).ok_or_else(|| invalid("short header"))?;
    let dict = std::str::from_utf8(dict).map_err(|_| invalid("header is not text"))?;
    if !dict.contains(&format!("'descr': '{descr}'")) {
        return Err(invalid(format!("dtype is not {descr}")));
    }
    if !dict.contains("'fortran_order': False") {
        return Err(invalid("not in C order"));
    }
    let shape = dict
        .split("'shape': (")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .ok_or_else(|| invalid("no shape"))?;
    let dims = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| invalid("bad shape")))
        .collect::<io::Result<Vec<usize>>>()?;
    Ok((&bytes[10 + hlen..], dims))
}

/// The data of `bytes` as `len` elements, viewed by ndarray-npy.
fn elements<'a, A: ViewElement>(
    data: &'a [u8],
    descr: &str,
    len: usize,
) -> Result<&'a [A], ViewDataError> {
    A::bytes_as_slice(data, &PyValue::String(descr.into()), len)
}

/// A float32 `[rows, cols]` array in `bytes`, viewed where it lies (a
/// buffer from the allocator puts the data, 64 bytes in, at a 4-byte
/// boundary), or copied out if it does not lie aligned.
pub fn view_f32_2d(bytes: &[u8]) -> io::Result<CowArray<'_, f32, Ix2>> {
    let (data, dims) = split(bytes, "<f4")?;
    let [rows, cols] = dims[..] else { return Err(invalid("expected 2 dimensions")) };
    let len = rows.checked_mul(cols).ok_or_else(|| invalid("shape overflows"))?;
    match elements::<f32>(data, "<f4", len) {
        Ok(s) => Ok(ArrayView2::from_shape((rows, cols), s).map_err(invalid)?.into()),
        Err(ViewDataError::Misaligned) => read_f32_2d(bytes).map(Into::into),
        Err(e) => Err(invalid(e)),
    }
}

/// A bool `[rows]` array in `bytes`, viewed where it lies (every byte
/// checked to be 0 or 1).
pub fn view_bool_1d(bytes: &[u8]) -> io::Result<CowArray<'_, bool, Ix1>> {
    let (data, dims) = split(bytes, "|b1")?;
    let [rows] = dims[..] else { return Err(invalid("expected 1 dimension")) };
    Ok(ArrayView1::from(elements::<bool>(data, "|b1", rows).map_err(invalid)?).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr1, arr2};
    use ndarray_npy::WriteNpyExt;

    /// The header bytes NumPy 2.4.6 writes for the same arrays
    /// (`np.save(buf, np.arange(15, dtype='<f4').reshape(3, 5))` and a bool
    /// `[4]`): format 1.0, little-endian, C order, padded to 128 bytes.
    #[test]
    fn headers_are_the_bytes_numpy_writes() {
        let pad = |n: usize| " ".repeat(n);
        let f32_header = format!(
            "\u{93}NUMPY\x01\x00v\x00{{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }}{}\n",
            pad(58)
        );
        let bool_header = format!(
            "\u{93}NUMPY\x01\x00v\x00{{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }}{}\n",
            pad(60)
        );
        let latin1 = |s: &str| s.chars().map(|c| c as u32 as u8).collect::<Vec<u8>>();
        let values = Array2::from_shape_fn((3, 5), |(r, c)| (r * 5 + c) as f32);
        let f = f32_2d(values.view());
        assert_eq!(f[..128], latin1(&f32_header)[..], "{:?}", String::from_utf8_lossy(&f[..128]));
        assert_eq!(f.len(), 128 + 15 * 4);
        assert_eq!(&f[128 + 4..128 + 8], &1.0f32.to_le_bytes(), "little-endian, C order");
        let b = bool_1d(arr1(&[true, false, true, true]).view());
        assert_eq!(b[..128], latin1(&bool_header)[..]);
        assert_eq!(&b[128..], &[1, 0, 1, 1]);
    }

    /// What ndarray-npy's own writer would change: the dictionary's end
    /// (`)}` for NumPy's `), }`), and so the padding; never the data. If a
    /// new ndarray-npy writes NumPy's bytes, this fails, and the module's
    /// own header can go.
    #[test]
    fn ndarray_npy_writes_another_header_and_the_same_data() {
        let values = arr2(&[[1.5f32, -2.0, 0.0, f32::NAN, 3.25], [4.0, 5.0, 6.0, 7.0, 8.0]]);
        let ours = f32_2d(values.view());
        let mut theirs = Vec::new();
        values.write_npy(&mut theirs).unwrap();
        assert_eq!(ours.len(), theirs.len());
        assert_eq!(ours[128..], theirs[128..], "the data section is the same");
        let dict = |b: &[u8]| String::from_utf8_lossy(&b[10..128]).trim_end().to_string();
        assert_eq!(dict(&ours), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }");
        assert_eq!(dict(&theirs), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5)}");
        // Each reads the other's.
        assert_eq!(read_f32_2d(&theirs).unwrap().shape(), [2, 5]);
        assert_eq!(view_f32_2d(&theirs).unwrap().shape(), [2, 5]);
        assert_eq!(Array2::<f32>::read_npy(&ours[..]).unwrap().shape(), [2, 5]);
        // A Fortran-order file is refused, not read transposed.
        let mut fortran = Vec::new();
        values.t().write_npy(&mut fortran).unwrap();
        assert!(view_f32_2d(&fortran).is_err());
    }

    #[test]
    fn round_trips_aligns_headers_and_refuses_the_wrong_kind() {
        let v = arr2(&[[1.5f32, -2.0, 0.0], [f32::NAN, 3.25, 4.0]]);
        let b = f32_2d(v.view());
        assert_eq!((b.len() - v.len() * 4) % 64, 0);
        let back = read_f32_2d(&b).unwrap();
        assert_eq!(back.shape(), [2, 3]);
        let bits = |a: &Array2<f32>| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&v));
        let flags = arr1(&[true, false, true]);
        assert_eq!(read_bool_1d(&bool_1d(flags.view())).unwrap(), flags);
        assert_eq!(read_f32_2d(&f32_2d(Array2::<f32>::zeros((0, 5)).view())).unwrap().len(), 0);
        assert!(read_f32_2d(&bool_1d(flags.view())).is_err(), "a bool array is not float32");
        assert!(read_bool_1d(&b).is_err(), "a float32 array is not bool");
        let mut bad = bool_1d(flags.view());
        *bad.last_mut().unwrap() = 2;
        assert!(read_bool_1d(&bad).is_err(), "a bool byte other than 0 or 1");
        assert!(read_f32_2d(&b[..b.len() - 1]).is_err(), "a truncated file");
        // Viewed where it lies, or copied when the data is not aligned; the
        // same values either way.
        let viewed = view_f32_2d(&b).unwrap();
        assert!(viewed.is_view(), "a fresh buffer is aligned");
        assert_eq!(bits(&viewed.to_owned()), bits(&v));
        let mut shifted = vec![0u8; b.len() + 1];
        shifted[1..].copy_from_slice(&b);
        let copied = view_f32_2d(&shifted[1..]).unwrap();
        assert!(!copied.is_view());
        assert_eq!(bits(&copied.to_owned()), bits(&v));
        assert_eq!(view_bool_1d(&bool_1d(flags.view())).unwrap(), flags);
        assert!(view_bool_1d(&bad).is_err());
        assert!(view_f32_2d(&b[..b.len() - 1]).is_err(), "a truncated file");
        assert!(view_f32_2d(&[b.as_slice(), &[0]].concat()).is_err(), "a byte too many");
        assert!(view_f32_2d(&bool_1d(flags.view())).is_err(), "a bool array is not float32");
    }
}
