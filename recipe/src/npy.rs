//! NumPy `.npy` (format 1.0) for the two array kinds the cache stores:
//! float32 `[rows, cols]` and bool `[rows]`, little-endian, C order.

use std::io;

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

/// `.npy` bytes of a float32 `[rows, cols]` array.
pub fn f32_2d(values: &[f32], cols: usize) -> Vec<u8> {
    let rows = values.len() / cols.max(1);
    let mut out = header("<f4", &format!("({rows}, {cols})"));
    let start = out.len();
    out.resize(start + values.len() * 4, 0);
    for (dst, v) in out[start..].chunks_exact_mut(4).zip(values) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// `.npy` bytes of a bool `[rows]` array.
pub fn bool_1d(values: &[bool]) -> Vec<u8> {
    let mut out = header("|b1", &format!("({},)", values.len()));
    out.extend(values.iter().map(|&b| b as u8));
    out
}

/// Reads the data section and shape of an `.npy` written by this module.
fn parse<'a>(bytes: &'a [u8], descr: &str) -> io::Result<(&'a [u8], Vec<usize>)> {
    let bad =
        |m: &str| io::Error::new(io::ErrorKind::InvalidData, format!("not a stagebench .npy: {m}"));
    if bytes.len() < 10 || &bytes[..8] != b"\x93NUMPY\x01\x00" {
        return Err(bad("bad magic"));
    }
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let dict = std::str::from_utf8(bytes.get(10..10 + hlen).ok_or_else(|| bad("short header"))?)
        .map_err(|_| bad("header is not text"))?;
    if !dict.contains(&format!("'descr': '{descr}'")) {
        return Err(bad("unexpected dtype"));
    }
    let shape = dict
        .split("'shape': (")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .ok_or_else(|| bad("no shape"))?;
    let dims = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| bad("bad shape")))
        .collect::<io::Result<Vec<usize>>>()?;
    Ok((&bytes[10 + hlen..], dims))
}

/// Parses a float32 `[rows, cols]` array.
pub fn read_f32_2d(bytes: &[u8]) -> io::Result<(Vec<f32>, usize)> {
    let (data, dims) = parse(bytes, "<f4")?;
    let (rows, cols) = match dims[..] {
        [r, c] => (r, c),
        _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "expected 2 dimensions")),
    };
    if data.len() != rows * cols * 4 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "data length does not match the shape",
        ));
    }
    Ok((data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(), cols))
}

/// Parses a bool `[rows]` array.
pub fn read_bool_1d(bytes: &[u8]) -> io::Result<Vec<bool>> {
    let (data, dims) = parse(bytes, "|b1")?;
    if dims.len() != 1 || data.len() != dims[0] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "data length does not match the shape",
        ));
    }
    Ok(data.iter().map(|&b| b != 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let values: Vec<f32> = (0..15).map(|i| i as f32).collect();
        let f = f32_2d(&values, 5);
        assert_eq!(f[..128], latin1(&f32_header)[..], "{:?}", String::from_utf8_lossy(&f[..128]));
        assert_eq!(f.len(), 128 + 15 * 4);
        assert_eq!(&f[128 + 4..128 + 8], &1.0f32.to_le_bytes(), "little-endian, C order");
        let b = bool_1d(&[true, false, true, true]);
        assert_eq!(b[..128], latin1(&bool_header)[..]);
        assert_eq!(&b[128..], &[1, 0, 1, 1]);
    }

    #[test]
    fn round_trips_and_aligns_headers() {
        let v = [1.5f32, -2.0, 0.0, f32::NAN, 3.25, 4.0];
        let b = f32_2d(&v, 3);
        assert_eq!((b.len() - v.len() * 4) % 64, 0);
        let (back, cols) = read_f32_2d(&b).unwrap();
        assert_eq!(cols, 3);
        assert_eq!(back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), v.map(|x| x.to_bits()));
        let flags = [true, false, true];
        assert_eq!(read_bool_1d(&bool_1d(&flags)).unwrap(), flags);
        assert_eq!(read_f32_2d(&f32_2d(&[], 5)).unwrap().0.len(), 0);
        assert!(read_f32_2d(&bool_1d(&flags)).is_err());
    }
}
