//! RFC 7519 §2 NumericDate, the one reading of `exp`, `nbf` and `iat` for every token
//! kind: a JSON number of seconds since the epoch, integer or not. A present claim that
//! is not one (a string, a boolean, `null`, a negative number, a date past year 9999) is
//! a malformed token, never "no such claim": an `nbf` the validator could not read used
//! to be skipped, which let a not-yet-valid token in.

use serde_json::Value;

use crate::error::AuthError;

/// 9999-12-31T23:59:59Z. No issuer writes a later date; a larger `exp` (`1e300`, or
/// `u64::MAX`) would be a token that never expires, so it is refused as malformed.
pub(crate) const MAX_NUMERIC_DATE: u64 = 253_402_300_799;

/// The refusal of a time claim that is present but not a NumericDate.
pub(crate) const MALFORMED_DATE: AuthError =
    AuthError::InvalidToken("a time claim (exp, nbf, iat) is not a NumericDate");

/// `v` as whole seconds, rounded up; `None` when it is not a NumericDate.
///
/// Rounding up is exact against a clock read in whole seconds: a token with
/// `exp = t + 0.5` is expired from `t + 1` on (`ceil = t + 1 <= now`), and one with
/// `nbf = t + 0.5` is valid from `t + 1` on (`ceil = t + 1 <= now`).
pub(crate) fn seconds(v: &Value) -> Option<u64> {
    let Value::Number(n) = v else {
        return None;
    };
    if let Some(s) = n.as_u64() {
        return (s <= MAX_NUMERIC_DATE).then_some(s);
    }
    // Negative integers and fractions arrive here.
    let f = n.as_f64()?;
    if !(f.is_finite() && (0.0..=MAX_NUMERIC_DATE as f64).contains(&f)) {
        return None;
    }
    // In range and finite: the cast cannot saturate.
    Some(f.ceil() as u64)
}

/// The claim `name` of `claims`: `Ok(None)` when absent, [`MALFORMED_DATE`] when
/// present but not a NumericDate.
pub(crate) fn claim(claims: &Value, name: &str) -> Result<Option<u64>, AuthError> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => seconds(v).map(Some).ok_or(MALFORMED_DATE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_and_fractions_are_read_rounded_up() {
        assert_eq!(seconds(&json!(0)), Some(0));
        assert_eq!(seconds(&json!(1_700_000_000)), Some(1_700_000_000));
        assert_eq!(seconds(&json!(1_700_000_000.25)), Some(1_700_000_001));
        assert_eq!(seconds(&json!(1_700_000_000.0)), Some(1_700_000_000));
        assert_eq!(seconds(&json!(1.7e9)), Some(1_700_000_000));
        assert_eq!(seconds(&json!(MAX_NUMERIC_DATE)), Some(MAX_NUMERIC_DATE));
    }

    #[test]
    fn what_is_not_a_date_is_refused() {
        for v in [
            json!("1700000000"),
            json!(true),
            json!(null),
            json!([1_700_000_000]),
            json!({"t": 1}),
            json!(-1),
            json!(-0.5),
            json!(MAX_NUMERIC_DATE + 1),
            json!(u64::MAX),
            json!(1e300),
            json!(f64::MAX),
        ] {
            assert_eq!(seconds(&v), None, "{v}");
        }
        let claims = json!({"nbf": "soon", "exp": 10});
        assert_eq!(claim(&claims, "nbf"), Err(MALFORMED_DATE));
        assert_eq!(claim(&claims, "exp"), Ok(Some(10)));
        assert_eq!(claim(&claims, "iat"), Ok(None));
    }
}
