//! Unix time helpers: RFC 3339 formatting (no calendar crate needed for UTC) and
//! aligning to rollup periods.

use turnpike_model::clock::civil_from_days;

/// `2026-11-23T22:46:32.123Z` for Unix milliseconds (UTC; proleptic Gregorian). Years
/// outside 0000-9999 are written with as many digits as they need. Digits are placed
/// by hand: `format!` cost ~3,000 instructions per analytics event.
pub fn rfc3339_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000) as u32;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        );
    }
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: u32| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y as u32);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, rem / 3600);
    put(14, 2, rem % 3600 / 60);
    put(17, 2, rem % 60);
    put(20, 3, millis);
    // Digits, dashes, colons, a dot and letters: ASCII.
    String::from_utf8_lossy(&b).into_owned()
}

/// The start (Unix seconds) of the `period`-second bucket holding `secs`.
pub fn align(secs: i64, period: i64) -> i64 {
    secs - secs.rem_euclid(period.max(1))
}

/// Now, Unix seconds.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_795_473_992_123), "2026-11-23T22:46:32.123Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339_ms(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339_ms(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
        assert_eq!(align(3_725, 3_600), 3_600);
        assert_eq!(align(-1, 60), -60);
    }
}
