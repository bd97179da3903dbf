//! Reading an imported OpenAPI document: its text (JSON or YAML, which is a superset of
//! JSON) as a JSON value, and a zip of several files bundled into one document.
//!
//! Integers beyond 64 bits are read as floats, as JSON parsers do (`serde_json`'s own
//! reader does it for a JSON body): public descriptions carry bounds such as
//! `minimum: -9223372036854776000` that `serde_yaml` hands over as `i128`, which
//! `serde_json::Value` refuses.
//!
//! Bundling inlines every relative `$ref` (`schemas/pet.yaml#/Pet`, `./paths.json`) into
//! the root document, resolved against the directory of the file that holds it; a
//! reference into a file other than the root is inlined with its own local (`#/...`)
//! references. References by URL, and a reference cycle (a recursive schema across
//! files), are left as written. The work is capped: at most [`MAX_NODES`] values in the
//! bundled document (copies included), so a reference fan-out cannot blow it up.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Most values a bundled document may hold.
pub(crate) const MAX_NODES: usize = 2_000_000;

/// The document's text (JSON or YAML) as a JSON value.
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    serde_yaml::from_str::<Lenient>(text)
        .map(|l| l.0)
        .map_err(|e| e.to_string())
}

/// A JSON value read by any serde format, integers beyond 64 bits as floats.
struct Lenient(Value);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LenientVisitor).map(Lenient)
    }
}

struct LenientVisitor;

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON or YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or_else(|_| float(v as f64), Value::from))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Value, E> {
        Ok(u64::try_from(v).map_or_else(|_| float(v as f64), Value::from))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Lenient::deserialize(d).map(|l| l.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Lenient(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some((k, Lenient(v))) = map.next_entry::<String, Lenient>()? {
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// The root OpenAPI document of an archive's files, every relative `$ref` inlined; with
/// the root's path.
pub(crate) fn bundle(files: &BTreeMap<String, String>) -> Result<(String, Value), String> {
    let parsed: BTreeMap<&str, Result<Value, String>> = files
        .iter()
        .map(|(path, text)| (path.as_str(), parse(text)))
        .collect();
    let root = root_of(&parsed)?;
    let doc = match parsed.get(root) {
        Some(Ok(v)) => v.clone(),
        _ => return Err(format!("{root}: not JSON or YAML")),
    };
    let mut b = Bundler {
        files: &parsed,
        stack: Vec::new(),
        budget: MAX_NODES,
    };
    let out = b.resolve(doc, root, true)?;
    Ok((root.to_string(), out))
}

/// The archive's OpenAPI document: the one file with a top-level `openapi` field, or of
/// several, the one nearest the archive's top (a single one at that depth).
fn root_of<'a>(parsed: &BTreeMap<&'a str, Result<Value, String>>) -> Result<&'a str, String> {
    let mut roots: Vec<&str> = parsed
        .iter()
        .filter(|(_, v)| matches!(v, Ok(d) if d.get("openapi").is_some()))
        .map(|(p, _)| *p)
        .collect();
    let depth = |p: &str| p.matches('/').count();
    roots.sort_by_key(|p| depth(p));
    match roots.as_slice() {
        [] => Err("the archive holds no OpenAPI document (a .yaml, .yml or .json file with an `openapi` field)".into()),
        [one] => Ok(*one),
        [a, b, ..] if depth(a) < depth(b) => Ok(*a),
        [a, b, ..] => Err(format!(
            "the archive holds several OpenAPI documents at its top ({a}, {b}): keep one"
        )),
    }
}

struct Bundler<'a> {
    files: &'a BTreeMap<&'a str, Result<Value, String>>,
    /// The references being inlined (file and fragment), to leave a cycle as written.
    stack: Vec<(String, String)>,
    budget: usize,
}

impl Bundler<'_> {
    /// `v` (from `file`) with its references inlined; `in_root` keeps local references
    /// of the root document as written.
    fn resolve(&mut self, v: Value, file: &str, in_root: bool) -> Result<Value, String> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or_else(|| format!("the bundled document exceeds {MAX_NODES} values"))?;
        match v {
            Value::Object(map) => match map.get("$ref").and_then(Value::as_str) {
                Some(r) => self.reference(r.to_string(), map, file, in_root),
                None => {
                    let mut out = Map::new();
                    for (k, v) in map {
                        out.insert(k, self.resolve(v, file, in_root)?);
                    }
                    Ok(Value::Object(out))
                }
            },
            Value::Array(items) => items
                .into_iter()
                .map(|v| self.resolve(v, file, in_root))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other),
        }
    }

    fn reference(
        &mut self,
        r: String,
        map: Map<String, Value>,
        file: &str,
        in_root: bool,
    ) -> Result<Value, String> {
        let (target, fragment) = r.split_once('#').unwrap_or((r.as_str(), ""));
        let is_url = target.contains("://");
        if is_url || (target.is_empty() && in_root) {
            return Ok(Value::Object(map));
        }
        let target = if target.is_empty() {
            file.to_string()
        } else {
            join(file, target).ok_or_else(|| format!("{file}: $ref {r} leaves the archive"))?
        };
        let key = (target.clone(), fragment.to_string());
        if self.stack.contains(&key) {
            return Ok(Value::Object(map));
        }
        let doc = match self.files.get(target.as_str()) {
            Some(Ok(d)) => d,
            Some(Err(e)) => return Err(format!("{target}: not JSON or YAML: {e}")),
            None => return Err(format!("{file}: $ref {r}: no file {target} in the archive")),
        };
        let part = pointer(doc, fragment)
            .ok_or_else(|| format!("{file}: $ref {r}: no {fragment} in {target}"))?
            .clone();
        self.stack.push(key);
        let out = self.resolve(part, &target, false);
        self.stack.pop();
        out
    }
}

/// A JSON pointer (`/a/b~1c`, empty for the whole document) into `doc`.
fn pointer<'v>(doc: &'v Value, fragment: &str) -> Option<&'v Value> {
    if fragment.is_empty() {
        return Some(doc);
    }
    let decoded = fragment.replace("%7B", "{").replace("%7D", "}");
    doc.pointer(&decoded)
}

/// `relative` resolved against the directory of `from` (both `/`-separated archive
/// paths); `None` when it climbs above the archive's top.
fn join(from: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for seg in relative.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_beyond_64_bits_read_as_floats() {
        let v = parse("a: -9223372036854776000\nb: 340282366920938463463374607431768211455\nc: 7")
            .expect("parses");
        assert_eq!(v["a"].as_f64(), Some(-9_223_372_036_854_776_000.0));
        assert!(v["b"].as_f64().is_some_and(|b| b > 3.0e38));
        assert_eq!(v["c"].as_i64(), Some(7));
        let j = parse(r#"{"minimum": -9223372036854776000}"#).expect("JSON text");
        assert!(j["minimum"].is_f64());
    }

    #[test]
    fn relative_references_are_inlined_from_their_own_directory() {
        let files = BTreeMap::from([
            ("api/openapi.yaml".to_string(), "openapi: 3.0.3\npaths:\n  /pets: {$ref: 'paths/pets.yaml'}\ncomponents: {schemas: {Local: {type: string}}}\nx: {$ref: '#/components/schemas/Local'}\n".to_string()),
            ("api/paths/pets.yaml".to_string(), "get:\n  responses:\n    '200': {content: {application/json: {schema: {$ref: '../schemas.yaml#/Pet'}}}}\n".to_string()),
            ("api/schemas.yaml".to_string(), "Pet: {type: object, properties: {tag: {$ref: '#/Tag'}}}\nTag: {type: string}\n".to_string()),
        ]);
        let (root, doc) = bundle(&files).expect("bundles");
        assert_eq!(root, "api/openapi.yaml");
        let schema = &doc["paths"]["/pets"]["get"]["responses"]["200"]["content"]
            ["application/json"]["schema"];
        assert_eq!(schema["properties"]["tag"]["type"], "string");
        // The root's own local references stay as written.
        assert_eq!(doc["x"]["$ref"], "#/components/schemas/Local");
    }

    #[test]
    fn cycles_stay_references_and_escapes_and_gaps_are_refused() {
        let files = BTreeMap::from([
            (
                "o.yaml".to_string(),
                "openapi: 3.1.0\ns: {$ref: 'n.yaml#/Node'}\n".to_string(),
            ),
            (
                "n.yaml".to_string(),
                "Node: {properties: {next: {$ref: '#/Node'}}}\n".to_string(),
            ),
        ]);
        let (_, doc) = bundle(&files).expect("bundles");
        assert_eq!(doc["s"]["properties"]["next"]["$ref"], "#/Node");
        let escape = BTreeMap::from([(
            "o.yaml".to_string(),
            "openapi: 3.0.0\ns: {$ref: '../x.yaml'}".to_string(),
        )]);
        assert!(bundle(&escape)
            .expect_err("escape")
            .contains("leaves the archive"));
        let gap = BTreeMap::from([(
            "o.yaml".to_string(),
            "openapi: 3.0.0\ns: {$ref: 'x.yaml'}".to_string(),
        )]);
        assert!(bundle(&gap).expect_err("gap").contains("no file x.yaml"));
    }

    #[test]
    fn a_reference_fan_out_stops_at_the_cap() {
        // Each level references the previous one twice: 2^40 copies if nothing stopped it.
        let mut text = String::from("L0: [1, 2, 3]\n");
        for i in 1..40 {
            text.push_str(&format!(
                "L{i}: [{{$ref: '#/L{p}'}}, {{$ref: '#/L{p}'}}]\n",
                p = i - 1
            ));
        }
        let files = BTreeMap::from([
            (
                "o.yaml".to_string(),
                "openapi: 3.0.0\nx: {$ref: 'b.yaml#/L39'}\n".to_string(),
            ),
            ("b.yaml".to_string(), text),
        ]);
        assert!(bundle(&files).expect_err("capped").contains("exceeds"));
    }
}
