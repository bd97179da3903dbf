//! A scalar written either as a bare number or as text with a unit (`10MiB`, `5s`).
//! Kept as written; `turnpike-config` gives it a meaning and refuses bad units.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number or a string, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quantity {
    Number(u64),
    Text(String),
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quantity::Number(n) => write!(f, "{n}"),
            Quantity::Text(t) => f.write_str(t),
        }
    }
}

impl From<u64> for Quantity {
    fn from(n: u64) -> Self {
        Quantity::Number(n)
    }
}

impl From<&str> for Quantity {
    fn from(s: &str) -> Self {
        Quantity::Text(s.to_owned())
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Quantity::Number(n) => s.serialize_u64(*n),
            Quantity::Text(t) => s.serialize_str(t),
        }
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

impl Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or a string with a unit, such as \"10MiB\" or \"5s\"")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
        Ok(Quantity::Number(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
        u64::try_from(v)
            .map(Quantity::Number)
            .map_err(|_| E::custom(format!("{v} is negative; expected a positive amount")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
        Ok(Quantity::Text(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text_round_trip_through_json() {
        let q: Vec<Quantity> = serde_json::from_str(r#"[10, "10MiB"]"#).unwrap_or_default();
        assert_eq!(q, [Quantity::Number(10), Quantity::from("10MiB")]);
        assert_eq!(
            serde_json::to_string(&q).ok().as_deref(),
            Some(r#"[10,"10MiB"]"#)
        );
        let neg: Result<Quantity, _> = serde_json::from_str("-1");
        assert!(neg
            .err()
            .is_some_and(|e| e.to_string().contains("negative")));
        let bad: Result<Quantity, _> = serde_json::from_str("[1]");
        assert!(bad
            .err()
            .is_some_and(|e| e.to_string().contains("a number or a string")));
    }
}
