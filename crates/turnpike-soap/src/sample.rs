//! Generates JSON documents that conform to a message's schema, from a seed: used by the
//! round-trip property tests and as examples in the generated OpenAPI document. Strings
//! carry XML metacharacters and non-ASCII text on purpose.

use serde_json::{Map, Value};

use crate::wsdl::Message;
use crate::xsd::model::*;

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// 0..n
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// Deepest nesting of complex values generated (optional content below is left out).
const MAX_DEPTH: usize = 6;

/// A JSON document for `message` (the shape [`crate::write::write_body`] takes).
pub fn message(model: &TypeModel, message: &Message, rng: &mut Rng) -> Value {
    match message.parts.as_slice() {
        [] => Value::Null,
        [part] => element_value(model, &part.element, rng, 0),
        parts => Value::Object(
            parts
                .iter()
                .map(|p| (p.name.clone(), element_value(model, &p.element, rng, 0)))
                .collect(),
        ),
    }
}

fn element_value(model: &TypeModel, e: &Element, rng: &mut Rng, depth: usize) -> Value {
    if e.nillable && rng.chance(5) {
        return Value::Null;
    }
    match &e.ty {
        Ty::Simple(s) => simple(s, rng),
        Ty::Any => Value::String(text(rng, None, None)),
        Ty::Complex(id) => complex(model, *id, rng, depth + 1),
    }
}

fn complex(model: &TypeModel, id: ComplexId, rng: &mut Rng, depth: usize) -> Value {
    let mut obj = Map::new();
    let ct = model.get(id);
    for a in crate::write::attributes(model, id) {
        if a.required || rng.chance(2) {
            obj.insert(a.key.clone(), simple(&a.ty, rng));
        }
    }
    if let Some(t) = &ct.text {
        obj.insert(TEXT_KEY.to_owned(), simple(t, rng));
    }
    let mut chosen: Vec<String> = Vec::new();
    let mut cur = Some(id);
    let mut chain = Vec::new();
    while let Some(c) = cur {
        if chain.contains(&c) || chain.len() > 64 {
            break;
        }
        chain.push(c);
        cur = model.get(c).base;
    }
    for c in chain.iter().rev() {
        if let Some(g) = &model.get(*c).content {
            choose(g, rng, depth, &mut chosen);
        }
    }
    for f in model.fields(id) {
        if !chosen.contains(&f.key) || obj.contains_key(&f.key) {
            continue;
        }
        let v = if f.array {
            let min = f.element.occurs.min.max(1);
            let max = f.element.occurs.max.unwrap_or(3).clamp(min, min + 2);
            let n = min + rng.below(u64::from(max - min + 1)) as u32;
            Value::Array(
                (0..n)
                    .map(|_| element_value(model, &f.element, rng, depth))
                    .collect(),
            )
        } else {
            element_value(model, &f.element, rng, depth)
        };
        obj.insert(f.key.clone(), v);
    }
    Value::Object(obj)
}

/// Picks which elements of a group appear: required ones, optional ones at random
/// (never below MAX_DEPTH), one branch of a choice.
fn choose(g: &Group, rng: &mut Rng, depth: usize, out: &mut Vec<String>) {
    let optional_ok = depth < MAX_DEPTH;
    if g.occurs.min == 0 && !(optional_ok && rng.chance(2)) {
        return;
    }
    match g.kind {
        GroupKind::Choice => {
            let live: Vec<&Particle> = g
                .items
                .iter()
                .filter(|p| !matches!(p, Particle::Any))
                .collect();
            if live.is_empty() {
                return;
            }
            // Below the depth limit prefer a branch that does not nest further.
            let pick = if optional_ok {
                live[rng.below(live.len() as u64) as usize]
            } else {
                live.iter()
                    .copied()
                    .find(|p| matches!(p, Particle::Element(e) if !matches!(e.ty, Ty::Complex(_))))
                    .unwrap_or(live[0])
            };
            take(pick, rng, depth, out, true);
        }
        _ => {
            for p in &g.items {
                take(p, rng, depth, out, false);
            }
        }
    }
}

fn take(p: &Particle, rng: &mut Rng, depth: usize, out: &mut Vec<String>, forced: bool) {
    match p {
        Particle::Element(e) => {
            let optional = e.occurs.min == 0 && !forced;
            if !optional || (depth < MAX_DEPTH && rng.chance(2)) {
                out.push(e.name.local.clone());
            }
        }
        Particle::Group(g) => choose(g, rng, depth, out),
        Particle::Any => {}
    }
}

/// A value of a simple type.
pub fn simple(t: &SimpleType, rng: &mut Rng) -> Value {
    if t.list {
        let item = SimpleType {
            list: false,
            ..t.clone()
        };
        let n = 1 + rng.below(3);
        // List items are whitespace-separated: no spaces inside them.
        return Value::Array((0..n).map(|_| no_space(simple(&item, rng))).collect());
    }
    if !t.enumeration.is_empty() {
        return Value::String(
            t.enumeration[rng.below(t.enumeration.len() as u64) as usize].clone(),
        );
    }
    match t.builtin {
        Builtin::Boolean => Value::Bool(rng.chance(2)),
        Builtin::Integer { min, max, .. } => {
            let lo = min.max(-1_000_000);
            let hi = max.min(1_000_000).max(lo);
            let n = lo + i128::from(rng.below((hi - lo + 1) as u64));
            Value::from(n as i64)
        }
        Builtin::Decimal | Builtin::Double | Builtin::Float => {
            let cents = rng.below(2_000_000) as i64 - 1_000_000;
            if rng.chance(2) {
                Value::from(cents)
            } else {
                serde_json::Number::from_f64(cents as f64 / 4.0)
                    .map_or(Value::from(0), Value::Number)
            }
        }
        Builtin::Date => Value::String(format!(
            "20{:02}-0{}-1{}",
            rng.below(30),
            1 + rng.below(9),
            rng.below(9)
        )),
        Builtin::DateTime => Value::String(format!(
            "2024-05-1{}T12:3{}:00Z",
            rng.below(9),
            rng.below(9)
        )),
        Builtin::Time => Value::String(format!("1{}:00:00", rng.below(9))),
        Builtin::Duration => Value::String(format!("PT{}M", rng.below(90))),
        Builtin::Base64Binary => Value::String("aGVsbG8=".into()),
        Builtin::HexBinary => Value::String("0FB7".into()),
        Builtin::AnyUri => Value::String(format!("http://example.com/{}", rng.below(100))),
        Builtin::String => Value::String(text(rng, t.min_length, t.max_length)),
    }
}

fn no_space(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(char::is_whitespace, "_")),
        v => v,
    }
}

/// Text with XML metacharacters and non-ASCII, within the length facets.
fn text(rng: &mut Rng, min: Option<u64>, max: Option<u64>) -> String {
    const PIECES: [&str; 8] = ["a", "<b>", "&amp;", "\"q\"", "'", "é", "]]>", " x "];
    let mut s = String::new();
    let want = min
        .unwrap_or(0)
        .max(1 + rng.below(6))
        .min(max.unwrap_or(u64::MAX));
    while (s.chars().count() as u64) < want {
        s.push_str(PIECES[rng.below(PIECES.len() as u64) as usize]);
    }
    s.chars().take(max.unwrap_or(u64::MAX) as usize).collect()
}
