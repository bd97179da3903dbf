//! Human durations (`timeouts`): a whole number with a unit, `"250ms"`, `"5s"`,
//! `"2m"`, `"1h"`. A bare number is refused: `5` could mean seconds or milliseconds.

use std::time::Duration;

use turnpike_model::Quantity;

/// Upstream connect timeout when an API does not set one.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time to the upstream's response headers when an API does not set one.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout accepted.
const MAX: Duration = Duration::from_secs(24 * 3600);

const UNITS: [(&str, u64); 4] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)];

pub fn parse_duration(q: &Quantity) -> Result<Duration, String> {
    let hint = "write a whole number with a unit: \"250ms\", \"5s\", \"2m\", \"1h\"";
    let text = match q {
        Quantity::Number(n) => return Err(format!("{n} has no unit; {hint}")),
        Quantity::Text(t) => t.trim(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; {hint}"))?;
    let unit = unit.trim();
    if unit.is_empty() {
        return Err(format!("{text:?} has no unit; {hint}"));
    }
    let ms = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, m)| *m)
        .ok_or_else(|| format!("unknown duration unit {unit:?} in {text:?}; {hint}"))?;
    let d = n
        .checked_mul(ms)
        .map(Duration::from_millis)
        .filter(|d| *d <= MAX)
        .ok_or_else(|| format!("{text:?} is longer than the 24h allowed"))?;
    if d.is_zero() {
        return Err(format!("{text:?} is zero; a timeout must be positive"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Duration, String> {
        parse_duration(&Quantity::from(s))
    }

    #[test]
    fn units() {
        assert_eq!(p("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(p("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(p("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(p("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(p(" 3 s "), Ok(Duration::from_secs(3)));
    }

    #[test]
    fn refuses_nonsense() {
        assert!(parse_duration(&Quantity::Number(5))
            .err()
            .unwrap_or_default()
            .contains("no unit"));
        assert!(p("5").err().unwrap_or_default().contains("no unit"));
        assert!(p("5 fortnights")
            .err()
            .unwrap_or_default()
            .contains("unknown duration unit"));
        assert!(p("0s").err().unwrap_or_default().contains("zero"));
        assert!(p("25h").err().unwrap_or_default().contains("24h"));
        assert!(p("s").is_err());
        assert!(p("1.5s").is_err());
    }
}
