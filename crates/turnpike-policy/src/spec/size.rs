//! Human sizes (`max_body_size`): a byte count, `"512KiB"`, `"10MiB"`, `"1GB"`, or
//! `"unlimited"`. Binary units (KiB, MiB, GiB) are powers of 1024, decimal ones
//! (KB, MB, GB) powers of 1000, as their names say.

use turnpike_model::Quantity;

/// Body limit when an API does not set one: 10 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

const UNITS: [(&str, u64); 7] = [
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
];

/// `Ok(None)` means no limit.
pub fn parse_size(q: &Quantity) -> Result<Option<u64>, String> {
    let text = match q {
        Quantity::Number(n) => return Ok(Some(*n)),
        Quantity::Text(t) => t.trim(),
    };
    if text.eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    let hint =
        "write a byte count or a size such as \"512KiB\", \"10MiB\", \"1GB\", or \"unlimited\"";
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size; {hint}"))?;
    let unit = unit.trim();
    let mult = if unit.is_empty() {
        1
    } else {
        UNITS
            .iter()
            .find(|(u, _)| u.eq_ignore_ascii_case(unit))
            .map(|(_, m)| *m)
            .ok_or_else(|| format!("unknown size unit {unit:?} in {text:?}; {hint}"))?
    };
    n.checked_mul(mult)
        .map(Some)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<u64>, String> {
        parse_size(&Quantity::from(s))
    }

    #[test]
    fn units_and_numbers() {
        assert_eq!(parse_size(&Quantity::Number(42)), Ok(Some(42)));
        assert_eq!(p("10MiB"), Ok(Some(10 * 1024 * 1024)));
        assert_eq!(p("10 mib"), Ok(Some(10 * 1024 * 1024)));
        assert_eq!(p("1GB"), Ok(Some(1_000_000_000)));
        assert_eq!(p("512KiB"), Ok(Some(512 * 1024)));
        assert_eq!(p("7"), Ok(Some(7)));
        assert_eq!(p("7B"), Ok(Some(7)));
        assert_eq!(p("unlimited"), Ok(None));
    }

    #[test]
    fn refuses_nonsense() {
        assert!(p("ten MiB").is_err());
        assert!(p("10 parsecs")
            .err()
            .unwrap_or_default()
            .contains("unknown size unit"));
        assert!(p("").is_err());
        assert!(p("-1KiB").is_err());
        assert!(p("1.5MiB").is_err());
        assert!(p("99999999999999999999GiB").is_err());
        assert!(p("18446744073709551615GiB")
            .err()
            .unwrap_or_default()
            .contains("too large"));
    }
}
