//! UTC timestamps for run names and evidence, from the system clock, and the
//! civil-date arithmetic under them (and under the recipe's CMI timestamps).

use std::time::{SystemTime, UNIX_EPOCH};

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date of a day count since 1970-01-01 (`civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn parts(secs: i64) -> (i64, u32, u32, i64, i64, i64) {
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    (y, mo, d, s / 3600, s % 3600 / 60, s % 60)
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// `20261129T091500Z`, for directory names.
pub fn compact_utc_now() -> String {
    let (y, mo, d, h, mi, s) = parts(now_secs());
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// `2026-11-29T09:15:00Z`, for evidence.
pub fn rfc3339_utc_now() -> String {
    rfc3339_utc(now_secs())
}

/// `2026-11-29T09:15:00.123456Z`: an instant to the microsecond, for what
/// is ordered by when it started (runs made within one second).
pub fn rfc3339_utc_now_micros() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = rfc3339_utc(now.as_secs() as i64);
    format!("{}.{:06}Z", &secs[..secs.len() - 1], now.subsec_micros())
}

/// An RFC 3339 UTC instant as this crate writes it, with or without
/// microseconds, as a key that sorts by time: its seconds' text and its
/// microseconds (0 where it has none).
pub fn instant_key(s: &str) -> (&str, u32) {
    let s = s.strip_suffix('Z').unwrap_or(s);
    match s.split_once('.') {
        Some((secs, frac)) => {
            let digits: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
            (secs, digits.parse().unwrap_or(0))
        }
        None => (s, 0),
    }
}

pub fn rfc3339_utc(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = parts(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Instants with and without microseconds sort by time: a run of the
    /// same second with microseconds orders among them by its microsecond.
    #[test]
    fn instants_sort_to_the_microsecond() {
        let mut xs = vec![
            "2026-12-07T10:00:01Z",
            "2026-12-07T10:00:00.500000Z",
            "2026-12-07T10:00:00Z",
            "2026-12-07T10:00:00.000100Z",
        ];
        xs.sort_by_key(|s| instant_key(s));
        assert_eq!(
            xs,
            [
                "2026-12-07T10:00:00Z",
                "2026-12-07T10:00:00.000100Z",
                "2026-12-07T10:00:00.500000Z",
                "2026-12-07T10:00:01Z"
            ]
        );
        let now = rfc3339_utc_now_micros();
        assert_eq!(now.len(), "2026-12-07T10:00:00.000000Z".len(), "{now}");
        assert!(instant_key(&now).1 < 1_000_000);
    }

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_534_275_000), "2018-08-14T19:30:00Z");
        assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn civil_round_trip() {
        for days in [-1000i64, 0, 17_000, 17_757, 20_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
