//! Reads a JSON object field by field and collects every problem, so one response lists
//! every invalid field (not only the first serde would stop at).

use serde_json::{Map, Value};

use crate::error::{ApiError, FieldError};

/// An OAuth2 scope token (RFC 6749 §3.3: printable ASCII without space, `"` or `\`), at
/// most 100 characters: what resources, OAuth2 keys and API keys may name.
pub fn check_scope(s: &str) -> Option<String> {
    let ok = !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
    (!ok).then(|| "must be a scope token: 1-100 printable ASCII characters, no spaces, quotes or backslashes".into())
}

/// A reader over one JSON object that records errors instead of stopping.
pub struct Fields<'a> {
    obj: Option<&'a Map<String, Value>>,
    prefix: String,
    pub errors: Vec<FieldError>,
    known: Vec<&'static str>,
}

/// Characters refused in names: control characters (they break logs and headers).
fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control())
}

impl<'a> Fields<'a> {
    pub fn new(v: &'a Value, prefix: &str) -> Fields<'a> {
        let mut f = Fields {
            obj: v.as_object(),
            prefix: prefix.to_string(),
            errors: Vec::new(),
            known: Vec::new(),
        };
        if f.obj.is_none() {
            f.err("", "must be a JSON object");
        }
        f
    }

    pub fn err(&mut self, field: &str, message: impl Into<String>) {
        let field = match (self.prefix.is_empty(), field.is_empty()) {
            (true, _) => field.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}.{field}", self.prefix),
        };
        self.errors.push(FieldError {
            field,
            message: message.into(),
        });
    }

    fn get(&mut self, name: &'static str) -> Option<&'a Value> {
        self.known.push(name);
        self.obj.and_then(|o| o.get(name)).filter(|v| !v.is_null())
    }

    /// Marks fields that may appear (e.g. read-only ones echoed back) but are ignored.
    pub fn ignore(&mut self, names: &[&'static str]) {
        self.known.extend_from_slice(names);
    }

    /// A string field run through `check`: `Ok(None)` when absent, `Err` (recorded) when
    /// not a string or refused.
    fn checked_str(
        &mut self,
        name: &'static str,
        check: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, ()> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => match check(s) {
                None => Ok(Some(s.clone())),
                Some(m) => {
                    self.err(name, m);
                    Err(())
                }
            },
            Some(_) => {
                self.err(name, "must be a string");
                Err(())
            }
        }
    }

    /// A string of 1..=max characters without control characters.
    pub fn string(&mut self, name: &'static str, required: bool, max: usize) -> Option<String> {
        let r = self.checked_str(name, |s| {
            if required && s.trim().is_empty() {
                Some("must not be empty".into())
            } else if s.chars().count() > max {
                Some(format!("must be at most {max} characters"))
            } else if has_control(s) {
                Some("must not contain control characters".into())
            } else {
                None
            }
        });
        if required && matches!(r, Ok(None)) {
            self.err(name, "is required");
        }
        r.ok().flatten()
    }

    /// Free text: control characters other than newline and tab refused.
    pub fn text(&mut self, name: &'static str, max: usize) -> Option<String> {
        self.checked_str(name, |s| {
            if s.chars().count() > max {
                Some(format!("must be at most {max} characters"))
            } else if s
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
            {
                Some("must not contain control characters".into())
            } else {
                None
            }
        })
        .ok()
        .flatten()
    }

    /// A field of any JSON type (not `null`), for callers that check it themselves.
    pub fn value(&mut self, name: &'static str) -> Option<&'a Value> {
        self.get(name)
    }

    pub fn boolean(&mut self, name: &'static str) -> Option<bool> {
        match self.get(name) {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                self.err(name, "must be true or false");
                None
            }
        }
    }

    pub fn integer(&mut self, name: &'static str, min: i64, max: i64) -> Option<i64> {
        match self.get(name) {
            None => None,
            Some(v) => match v.as_i64() {
                Some(n) if (min..=max).contains(&n) => Some(n),
                _ => {
                    self.err(name, format!("must be an integer in {min}..={max}"));
                    None
                }
            },
        }
    }

    pub fn array(&mut self, name: &'static str) -> Option<&'a Vec<Value>> {
        match self.get(name) {
            None => None,
            Some(Value::Array(a)) => Some(a),
            Some(_) => {
                self.err(name, "must be an array");
                None
            }
        }
    }

    /// An array of strings, each checked by `check` (which returns an error message).
    pub fn strings(
        &mut self,
        name: &'static str,
        max_items: usize,
        check: impl Fn(&str) -> Option<String>,
    ) -> Option<Vec<String>> {
        let arr = self.array(name)?;
        if arr.len() > max_items {
            self.err(name, format!("must have at most {max_items} items"));
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (i, v) in arr.iter().enumerate() {
            match v.as_str() {
                Some(s) => match check(s) {
                    None => out.push(s.to_string()),
                    Some(m) => {
                        self.err(&format!("{name}[{i}]"), m);
                        ok = false;
                    }
                },
                None => {
                    self.err(&format!("{name}[{i}]"), "must be a string");
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    /// Records every field not read or ignored as unknown.
    pub fn finish_unknown(&mut self) {
        let Some(obj) = self.obj else { return };
        let unknown: Vec<String> = obj
            .keys()
            .filter(|k| !self.known.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in unknown {
            self.err(&k, "unknown field");
        }
    }

    pub fn into_result(self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(self.errors))
        }
    }
}
