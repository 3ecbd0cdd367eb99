//! Timestamps of the CMI format: `2018-08-14T15:30:00-0400`, local wall-clock
//! time with its UTC offset.

pub use evidence::timestamp::{civil_from_days, days_from_civil};

/// A parsed timestamp: seconds since local midnight and the UTC instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Local clock seconds of day, 0..86400.
    pub local_seconds: u32,
    /// Seconds since the Unix epoch, UTC.
    pub utc: i64,
}

fn digits(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u32;
    }
    Some(v)
}

/// Parses `YYYY-MM-DDTHH:MM:SS±HHMM` (also accepting `±HH:MM`).
pub fn parse(s: &[u8]) -> Option<Stamp> {
    if s.len() < 24
        || s[4] != b'-'
        || s[7] != b'-'
        || s[10] != b'T'
        || s[13] != b':'
        || s[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (digits(&s[0..4])?, digits(&s[5..7])?, digits(&s[8..10])?);
    let (h, mi, se) = (digits(&s[11..13])?, digits(&s[14..16])?, digits(&s[17..19])?);
    let sign = match s[19] {
        b'+' => 1i64,
        b'-' => -1,
        _ => return None,
    };
    let (oh, om) = match s.len() {
        24 => (digits(&s[20..22])?, digits(&s[22..24])?),
        25 if s[22] == b':' => (digits(&s[20..22])?, digits(&s[23..25])?),
        _ => return None,
    };
    if !(1..=12).contains(&mo) || d == 0 || d > 31 || h > 23 || mi > 59 || se > 59 || om > 59 {
        return None;
    }
    let local_seconds = h * 3600 + mi * 60 + se;
    let local = days_from_civil(y as i64, mo, d) * 86_400 + local_seconds as i64;
    let offset = sign * (oh as i64 * 3600 + om as i64 * 60);
    Some(Stamp { local_seconds, utc: local - offset })
}

/// Parses a 24-byte timestamp whose date and offset are known to equal those
/// of an earlier one whose local midnight was at UTC `midnight`: only
/// HH:MM:SS is read. Accepts and rejects exactly what [`parse`] would for
/// such a string.
#[inline]
pub fn parse_same_day(s: &[u8], midnight: i64) -> Option<Stamp> {
    if s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let (h, mi, se) = (digits(&s[11..13])?, digits(&s[14..16])?, digits(&s[17..19])?);
    if h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let local_seconds = h * 3600 + mi * 60 + se;
    Some(Stamp { local_seconds, utc: midnight + local_seconds as i64 })
}

/// Formats a local time with offset as `YYYY-MM-DDTHH:MM:SS±HHMM` into `out` (24 bytes).
pub fn format_into(utc: i64, offset_seconds: i64, out: &mut [u8; 24]) {
    let local = utc + offset_seconds;
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let (h, mi, se) = (s / 3600, s % 3600 / 60, s % 60);
    let put = |out: &mut [u8; 24], at: usize, v: i64, n: usize| {
        let mut v = v;
        for i in (0..n).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(out, 0, y, 4);
    out[4] = b'-';
    put(out, 5, m as i64, 2);
    out[7] = b'-';
    put(out, 8, d as i64, 2);
    out[10] = b'T';
    put(out, 11, h, 2);
    out[13] = b':';
    put(out, 14, mi, 2);
    out[16] = b':';
    put(out, 17, se, 2);
    out[19] = if offset_seconds < 0 { b'-' } else { b'+' };
    let o = offset_seconds.abs();
    put(out, 20, o / 3600, 2);
    put(out, 22, o % 3600 / 60, 2);
}

/// UTC offset of US Eastern time at a UTC instant: −4 h during daylight
/// saving (second Sunday of March 07:00 UTC to first Sunday of November
/// 06:00 UTC), −5 h otherwise. Used by the synthetic cohort.
pub fn eastern_offset(utc: i64) -> i64 {
    let (y, _, _) = civil_from_days(utc.div_euclid(86_400));
    let nth_sunday = |month: u32, n: i64| {
        let first = days_from_civil(y, month, 1);
        let weekday = (first + 4).rem_euclid(7); // 1970-01-01 was a Thursday (4)
        first + (7 - weekday) % 7 + 7 * (n - 1)
    };
    let start = nth_sunday(3, 2) * 86_400 + 7 * 3600;
    let end = nth_sunday(11, 1) * 86_400 + 6 * 3600;
    if utc >= start && utc < end { -4 * 3600 } else { -5 * 3600 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_cmi_format() {
        let s = parse(b"2018-08-14T15:30:00-0400").unwrap();
        assert_eq!(s.local_seconds, 15 * 3600 + 30 * 60);
        assert_eq!(s.utc, 1_534_275_000);
        assert_eq!(parse(b"2018-08-14T15:30:00-04:00"), Some(s));
        for bad in [
            &b"2018-08-14 15:30:00-0400"[..],
            b"2018-13-14T15:30:00-0400",
            b"2018-08-14T15:30:00Z",
            b"x",
        ] {
            assert!(parse(bad).is_none(), "{:?}", std::str::from_utf8(bad));
        }
    }

    #[test]
    fn formats_what_it_parses() {
        let mut b = [0u8; 24];
        format_into(1_534_275_000, -4 * 3600, &mut b);
        assert_eq!(&b, b"2018-08-14T15:30:00-0400");
    }

    #[test]
    fn daylight_saving_jumps_the_local_clock_not_utc() {
        // 2018-11-04 06:00 UTC: clocks go back from 02:00 EDT to 01:00 EST.
        let t = days_from_civil(2018, 11, 4) * 86_400 + 6 * 3600;
        assert_eq!(eastern_offset(t - 5), -4 * 3600);
        assert_eq!(eastern_offset(t), -5 * 3600);
        let mut a = [0u8; 24];
        let mut b = [0u8; 24];
        format_into(t - 5, eastern_offset(t - 5), &mut a);
        format_into(t, eastern_offset(t), &mut b);
        assert_eq!(&a, b"2018-11-04T01:59:55-0400");
        assert_eq!(&b, b"2018-11-04T01:00:00-0500");
        assert_eq!(parse(&b).unwrap().utc - parse(&a).unwrap().utc, 5);
        // 2018-03-11 07:00 UTC: 02:00 EST becomes 03:00 EDT.
        let t = days_from_civil(2018, 3, 11) * 86_400 + 7 * 3600;
        assert_eq!(eastern_offset(t - 1), -5 * 3600);
        assert_eq!(eastern_offset(t), -4 * 3600);
    }

    #[test]
    fn the_same_day_fast_path_agrees_with_the_full_parse() {
        let first = parse(b"2018-08-14T00:00:00-0400").unwrap();
        let midnight = first.utc;
        for text in [
            &b"2018-08-14T15:30:00-0400"[..],
            b"2018-08-14T23:59:59-0400",
            b"2018-08-14T24:00:00-0400",
            b"2018-08-14T15:3x:00-0400",
            b"2018-08-14T15:30:60-0400",
            b"2018-08-14 15:30:00-0400",
        ] {
            assert_eq!(
                parse_same_day(text, midnight),
                parse(text),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
