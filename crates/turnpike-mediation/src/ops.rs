//! Header, query and path operations. Each list runs in one fixed order (Kong's):
//! remove, rename, set (replace or create), add (only when absent), append (one more
//! value). Names are checked when compiled; the gateway's own framing headers
//! (`host`, `content-length`, `transfer-encoding`, `connection`, ...) cannot be touched.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use turnpike_model::mediation::FieldOps;
use turnpike_policy::Problem;

/// Headers a transformation must not change: the gateway frames messages with them.
const MANAGED: [&str; 8] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
];

/// Compiled header operations.
#[derive(Debug, Clone, Default)]
pub struct HeaderOps {
    remove: Vec<HeaderName>,
    rename: Vec<(HeaderName, HeaderName)>,
    set: Vec<(HeaderName, HeaderValue)>,
    add: Vec<(HeaderName, HeaderValue)>,
    append: Vec<(HeaderName, HeaderValue)>,
}

fn header_name(field: String, name: &str, problems: &mut Vec<Problem>) -> Option<HeaderName> {
    match HeaderName::from_bytes(name.as_bytes()) {
        Ok(n) if MANAGED.contains(&n.as_str()) => {
            problems.push(Problem::new(
                field,
                format!("header {name:?} is managed by the gateway"),
            ));
            None
        }
        Ok(n) => Some(n),
        Err(_) => {
            problems.push(Problem::new(
                field,
                format!("{name:?} is not a valid header name"),
            ));
            None
        }
    }
}

fn header_pairs(
    op: &str,
    map: &std::collections::BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) -> Vec<(HeaderName, HeaderValue)> {
    map.iter()
        .filter_map(|(k, v)| {
            let name = header_name(format!("{op}.{k}"), k, problems)?;
            match HeaderValue::from_str(v) {
                Ok(v) => Some((name, v)),
                Err(_) => {
                    problems.push(Problem::new(
                        format!("{op}.{k}"),
                        format!("{v:?} is not a valid header value"),
                    ));
                    None
                }
            }
        })
        .collect()
}

impl HeaderOps {
    pub fn compile(spec: &FieldOps, problems: &mut Vec<Problem>) -> HeaderOps {
        let remove = spec
            .remove
            .iter()
            .enumerate()
            .filter_map(|(i, n)| header_name(format!("remove[{i}]"), n, problems))
            .collect();
        let rename = spec
            .rename
            .iter()
            .filter_map(|(from, to)| {
                let f = header_name(format!("rename.{from}"), from, problems);
                let t = header_name(format!("rename.{from}"), to, problems);
                Some((f?, t?))
            })
            .collect();
        HeaderOps {
            remove,
            rename,
            set: header_pairs("set", &spec.set, problems),
            add: header_pairs("add", &spec.add, problems),
            append: header_pairs("append", &spec.append, problems),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.remove.is_empty()
            && self.rename.is_empty()
            && self.set.is_empty()
            && self.add.is_empty()
            && self.append.is_empty()
    }

    pub fn apply(&self, headers: &mut HeaderMap) {
        for name in &self.remove {
            headers.remove(name);
        }
        for (from, to) in &self.rename {
            if let http::header::Entry::Occupied(e) = headers.entry(from) {
                let (_, values) = e.remove_entry_mult();
                let values: Vec<HeaderValue> = values.collect();
                headers.remove(to);
                for v in values {
                    headers.append(to, v);
                }
            }
        }
        for (name, value) in &self.set {
            headers.insert(name, value.clone());
        }
        for (name, value) in &self.add {
            if !headers.contains_key(name) {
                headers.insert(name, value.clone());
            }
        }
        for (name, value) in &self.append {
            headers.append(name, value.clone());
        }
    }
}

/// Compiled query-parameter operations (names and values as decoded text).
#[derive(Debug, Clone, Default)]
pub struct QueryOps {
    remove: Vec<String>,
    rename: Vec<(String, String)>,
    set: Vec<(String, String)>,
    add: Vec<(String, String)>,
    append: Vec<(String, String)>,
}

impl QueryOps {
    pub fn compile(spec: &FieldOps, problems: &mut Vec<Problem>) -> QueryOps {
        let mut check = |field: String, name: &str| {
            if name.is_empty() {
                problems.push(Problem::new(
                    field,
                    "a query parameter needs a name".to_owned(),
                ));
            }
        };
        for (i, n) in spec.remove.iter().enumerate() {
            check(format!("remove[{i}]"), n);
        }
        for (op, map) in [
            ("rename", &spec.rename),
            ("set", &spec.set),
            ("add", &spec.add),
            ("append", &spec.append),
        ] {
            for k in map.keys() {
                check(format!("{op}.{k}"), k);
            }
        }
        for (k, v) in &spec.rename {
            check(format!("rename.{k}"), v);
        }
        let pairs = |m: &std::collections::BTreeMap<String, String>| {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        QueryOps {
            remove: spec.remove.clone(),
            rename: pairs(&spec.rename),
            set: pairs(&spec.set),
            add: pairs(&spec.add),
            append: pairs(&spec.append),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.remove.is_empty()
            && self.rename.is_empty()
            && self.set.is_empty()
            && self.add.is_empty()
            && self.append.is_empty()
    }

    /// The new query string (without '?'); `None` when no parameter is left.
    pub fn apply(&self, query: Option<&str>) -> Option<String> {
        let mut params: Vec<(String, String)> =
            form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .into_owned()
                .collect();
        params.retain(|(k, _)| !self.remove.contains(k));
        for (from, to) in &self.rename {
            if params.iter().any(|(k, _)| k == from) {
                params.retain(|(k, _)| k != to);
                for (k, _) in params.iter_mut().filter(|(k, _)| k == from) {
                    k.clone_from(to);
                }
            }
        }
        for (name, value) in &self.set {
            match params.iter().position(|(k, _)| k == name) {
                Some(first) => {
                    params[first].1.clone_from(value);
                    let mut i = 0;
                    params.retain(|(k, _)| {
                        i += 1;
                        k != name || i - 1 == first
                    });
                }
                None => params.push((name.clone(), value.clone())),
            }
        }
        for (name, value) in &self.add {
            if !params.iter().any(|(k, _)| k == name) {
                params.push((name.clone(), value.clone()));
            }
        }
        params.extend(self.append.iter().cloned());
        if params.is_empty() {
            return None;
        }
        Some(
            form_urlencoded::Serializer::new(String::new())
                .extend_pairs(params)
                .finish(),
        )
    }
}

/// A new upstream path built from literal text and the matched resource's parameters.
#[derive(Debug, Clone)]
pub struct PathRewrite {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Param(String),
}

impl PathRewrite {
    /// Parses `/v2/orders/{id}`; `params` are the names the resource template declares
    /// (`None`: not known here, e.g. an API-level rewrite, which then allows none).
    pub fn compile(template: &str, params: &[&str]) -> Result<PathRewrite, String> {
        if !template.starts_with('/') {
            return Err(format!("path {template:?} must start with '/'"));
        }
        let mut pieces = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                return Err(format!("path {template:?} has a '{{' without '}}'"));
            };
            let name = &rest[open + 1..open + close];
            if !params.contains(&name) {
                return Err(if params.is_empty() {
                    format!("path {template:?} uses {{{name}}} but the resource has no parameters")
                } else {
                    format!(
                        "path {template:?} uses {{{name}}}, which is not one of the resource's parameters ({})",
                        params.join(", ")
                    )
                });
            }
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_owned()));
            }
            pieces.push(Piece::Param(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("path {template:?} has a '}}' without '{{'"));
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(PathRewrite { pieces })
    }

    /// The new path. Parameter values are inserted as they arrived (still
    /// percent-encoded, one path segment each).
    pub fn apply(&self, params: &[(&str, &str)]) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Param(name) => {
                    if let Some((_, v)) = params.iter().find(|(k, _)| k == name) {
                        out.push_str(v);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn header_ops_run_in_order() {
        let spec = FieldOps {
            remove: vec!["x-drop".into()],
            rename: map(&[("x-old", "x-new")]),
            set: map(&[("x-set", "s")]),
            add: map(&[("x-new", "ignored"), ("x-added", "a")]),
            append: map(&[("x-set", "s2")]),
        };
        let mut problems = Vec::new();
        let ops = HeaderOps::compile(&spec, &mut problems);
        assert!(problems.is_empty());
        let mut h = HeaderMap::new();
        h.insert("x-drop", HeaderValue::from_static("1"));
        h.append("x-old", HeaderValue::from_static("o1"));
        h.append("x-old", HeaderValue::from_static("o2"));
        h.insert("x-set", HeaderValue::from_static("before"));
        ops.apply(&mut h);
        assert!(!h.contains_key("x-drop"));
        assert!(!h.contains_key("x-old"));
        let new: Vec<_> = h.get_all("x-new").iter().collect();
        assert_eq!(new, ["o1", "o2"]);
        let set: Vec<_> = h.get_all("x-set").iter().collect();
        assert_eq!(set, ["s", "s2"]);
        assert_eq!(h.get("x-added").map(|v| v.as_bytes()), Some(&b"a"[..]));
    }

    #[test]
    fn managed_and_invalid_headers_are_named() {
        let spec = FieldOps {
            set: map(&[
                ("content-length", "1"),
                ("bad name", "v"),
                ("x-ok", "bad\nvalue"),
            ]),
            ..FieldOps::default()
        };
        let mut problems = Vec::new();
        HeaderOps::compile(&spec, &mut problems);
        let fields: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(fields, ["set.bad name", "set.content-length", "set.x-ok"]);
    }

    #[test]
    fn query_ops_run_in_order() {
        let spec = FieldOps {
            remove: vec!["drop".into()],
            rename: map(&[("old", "new")]),
            set: map(&[("s", "1 2")]),
            add: map(&[("new", "x"), ("a", "b")]),
            append: map(&[("s", "3")]),
        };
        let mut problems = Vec::new();
        let ops = QueryOps::compile(&spec, &mut problems);
        let out = ops.apply(Some("drop=1&old=o&s=0&s=9&keep=%C3%BC"));
        assert_eq!(out.as_deref(), Some("new=o&s=1+2&keep=%C3%BC&a=b&s=3"));
        let ops = QueryOps::compile(
            &FieldOps {
                remove: vec!["a".into()],
                ..FieldOps::default()
            },
            &mut problems,
        );
        assert_eq!(ops.apply(Some("a=1")), None);
    }

    #[test]
    fn path_rewrite_uses_template_parameters() {
        let p = PathRewrite::compile("/v2/items/{id}/x", &["id"]).expect("compiles");
        assert_eq!(p.apply(&[("id", "42")]), "/v2/items/42/x");
        assert!(PathRewrite::compile("/v2/{nope}", &["id"]).is_err());
        assert!(PathRewrite::compile("v2", &[]).is_err());
        assert!(PathRewrite::compile("/v2/{id", &["id"]).is_err());
    }
}
