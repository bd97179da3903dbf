//! WSO2 PayloadFactory -> jq. A `<payloadFactory media-type="json">` whose `<format>` is a
//! JSON template with `$1..$n` placeholders and whose `<args>` are literal values or
//! JSONPath (`evaluator="json"`, or `json-eval(...)`) becomes one jq program:
//!
//! ```text
//! . as $in | <arg 1> as $a1 | ... | <the format, placeholders replaced>
//! ```
//!
//! - an unquoted placeholder (`"n": $2`) takes the argument's JSON value;
//! - a string that is exactly a placeholder (`"id": "$1"`) takes it as text, except that
//!   an object or array stays a value (WSO2 wrote it escaped inside a string);
//! - a placeholder inside other text (`"Hi $1"`) is jq string interpolation;
//! - a JSONPath that matches several values gives an array of them, one value gives the
//!   value, none gives `null` (json-eval's rules).
//!
//! What has no jq equivalent is named, one reason per item: XML formats, FreeMarker
//! templates, registry keys, XPath, Synapse properties (`$ctx:`, `get-property`), JSONPath
//! filters and functions.

use crate::xml::{parse_document, XmlLimits};

/// A converted mediator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// The jq program.
    pub jq: String,
}

/// Converts a `<payloadFactory>` element. `Err` lists every part that cannot be
/// converted.
pub fn convert(mediator: &str) -> Result<Converted, Vec<String>> {
    let doc = parse_document(mediator.trim(), &XmlLimits::default())
        .map_err(|e| vec![format!("the mediator is not XML this gateway reads: {e}")])?;
    let root = doc.root_element();
    if root.tag_name().name() != "payloadFactory" {
        return Err(vec![format!(
            "expected a <payloadFactory> element, found <{}>",
            root.tag_name().name()
        )]);
    }
    let mut problems = Vec::new();
    match root.attribute("media-type").unwrap_or("xml") {
        "json" => {}
        other => problems.push(format!(
            "media-type {other:?}: only JSON formats convert (write the XML with a jq program and `output: xml`)"
        )),
    }
    if let Some(t) = root.attribute("template-type").filter(|t| *t != "default") {
        problems.push(format!(
            "template-type {t:?}: FreeMarker templates do not convert"
        ));
    }
    let child = |name: &str| root.children().find(|c| c.tag_name().name() == name);
    let format = match child("format") {
        Some(f) if f.attribute("key").is_some() => {
            problems.push(
                "<format key=...>: a registry resource cannot be read here; paste the template"
                    .to_owned(),
            );
            None
        }
        Some(f) => Some(f.text().unwrap_or("").trim().to_owned()),
        None => {
            problems.push("no <format> element".to_owned());
            None
        }
    };
    let mut args = Vec::new();
    if let Some(list) = child("args") {
        for (i, arg) in list.children().filter(|c| c.is_element()).enumerate() {
            match convert_arg(arg) {
                Ok(expr) => args.push(expr),
                Err(why) => {
                    problems.push(format!("arg {}: {why}", i + 1));
                    args.push("null".to_owned());
                }
            }
        }
    }
    let body = match format {
        Some(f) => match template(&f, args.len()) {
            Ok(body) => Some(body),
            Err(why) => {
                problems.push(why);
                None
            }
        },
        None => None,
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut jq = String::from(". as $in");
    for (i, a) in args.iter().enumerate() {
        jq.push_str(&format!("\n| ([$in | {a}] | if length == 1 then .[0] elif length == 0 then null else . end) as $a{}", i + 1));
    }
    jq.push_str("\n| ");
    jq.push_str(&body.unwrap_or_default());
    Ok(Converted { jq })
}

fn convert_arg(arg: roxmltree::Node<'_, '_>) -> Result<String, String> {
    if let Some(v) = arg.attribute("value") {
        return serde_json::to_string(v).map_err(|e| e.to_string());
    }
    let Some(expr) = arg.attribute("expression") else {
        return Err("neither value nor expression".to_owned());
    };
    let expr = expr.trim();
    let (path, evaluator) = match expr
        .strip_prefix("json-eval(")
        .and_then(|e| e.strip_suffix(')'))
    {
        Some(inner) => (inner.trim(), "json"),
        None => (expr, arg.attribute("evaluator").unwrap_or("xml")),
    };
    if evaluator != "json" {
        return Err(format!(
            "{expr:?} is XPath (evaluator {evaluator:?}); only JSONPath converts"
        ));
    }
    if path.starts_with("$ctx:")
        || path.starts_with("$axis2:")
        || path.starts_with("$trp:")
        || path.starts_with("get-property")
    {
        return Err(format!(
            "{path:?} reads a Synapse property, which has no jq equivalent"
        ));
    }
    jsonpath(path).map_err(|why| format!("JSONPath {path:?}: {why}"))
}

/// Translates the JSONPath subset with a jq equivalent.
pub fn jsonpath(path: &str) -> Result<String, String> {
    let Some(mut rest) = path.strip_prefix('$') else {
        return Err("must start with '$'".to_owned());
    };
    let mut out = String::from(".");
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("..") {
            let (name, r) = take_name(r)?;
            out.push_str(&format!(
                " | [.. | objects | select(has({n})) | .[{n}]] | .[]",
                n = quote(name)
            ));
            rest = r;
        } else if let Some(r) = rest.strip_prefix(".*") {
            out.push_str(" | .[]?");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('.') {
            let (name, r) = take_name(r)?;
            out.push_str(&format!(" | .[{}]?", quote(name)));
            rest = r;
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Err("'[' without ']'".to_owned());
            };
            let inner = r[..end].trim();
            out.push_str(&bracket(inner)?);
            rest = &r[end + 1..];
        } else {
            return Err(format!("cannot read {rest:?}"));
        }
    }
    Ok(out)
}

fn take_name(s: &str) -> Result<(&str, &str), String> {
    let end = s.find(['.', '[']).unwrap_or(s.len());
    let name = &s[..end];
    if name.is_empty() {
        return Err("an empty member name".to_owned());
    }
    if name.contains('(') {
        return Err(format!("function {name:?} has no jq equivalent here"));
    }
    Ok((name, &s[end..]))
}

fn bracket(inner: &str) -> Result<String, String> {
    if inner == "*" {
        return Ok(" | .[]?".to_owned());
    }
    if inner.starts_with('?') || inner.starts_with('(') {
        return Err(format!("filter or script [{inner}] does not convert"));
    }
    if let Some(name) = inner
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
    {
        return Ok(format!(" | .[{}]?", quote(name)));
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Ok(format!(" | .[{i}]?"));
    }
    if let Some((a, b)) = inner.split_once(':') {
        let bound = |s: &str| -> Result<String, String> {
            let s = s.trim();
            if s.is_empty() {
                Ok(String::new())
            } else {
                s.parse::<i64>()
                    .map(|n| n.to_string())
                    .map_err(|_| format!("slice [{inner}]"))
            }
        };
        return Ok(format!(" | .[{}:{}]? | .[]", bound(a)?, bound(b)?));
    }
    if inner.contains(',') {
        return Err(format!("union [{inner}] does not convert"));
    }
    Err(format!("[{inner}] does not convert"))
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The format with its placeholders replaced by jq: see the module doc.
fn template(format: &str, nargs: usize) -> Result<String, String> {
    let mut out = String::new();
    let mut check = String::new();
    let mut chars = format.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            let end = string_end(format, i).ok_or("the format has an unterminated string")?;
            let literal = &format[i..=end];
            let content = &format[i + 1..end];
            if let Some(n) = whole_placeholder(content) {
                arg_index(n, nargs)?;
                out.push_str(&format!(
                    "($a{n} | if type == \"object\" or type == \"array\" then . else tostring end)"
                ));
            } else {
                out.push_str(&interpolate(literal, nargs)?);
            }
            check.push_str(literal);
            while chars.peek().is_some_and(|(j, _)| *j <= end) {
                chars.next();
            }
        } else if c == '$' {
            let digits: String = format[i + 1..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if digits.is_empty() {
                return Err(format!(
                    "a '$' at byte {i} of the format is not a placeholder"
                ));
            }
            let n = arg_index(&digits, nargs)?;
            out.push_str(&format!("($a{n})"));
            check.push('0');
            for _ in 0..digits.len() {
                chars.next();
            }
        } else {
            out.push(c);
            check.push(c);
        }
    }
    serde_json::from_str::<serde::de::IgnoredAny>(&check)
        .map_err(|e| format!("the format is not a JSON template: {e}"))?;
    Ok(out)
}

/// Index of the closing quote of the string starting at `start`.
fn string_end(s: &str, start: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn whole_placeholder(content: &str) -> Option<&str> {
    let digits = content.strip_prefix('$')?;
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then_some(digits)
}

fn arg_index(digits: &str, nargs: usize) -> Result<usize, String> {
    match digits.parse::<usize>() {
        Ok(n) if n >= 1 && n <= nargs => Ok(n),
        _ => Err(format!(
            "placeholder ${digits} has no matching <arg> ({nargs} given)"
        )),
    }
}

/// A JSON string literal with `$n` turned into jq interpolations.
fn interpolate(literal: &str, nargs: usize) -> Result<String, String> {
    let mut out = String::with_capacity(literal.len());
    let mut rest = literal;
    while let Some(at) = rest.find('$') {
        let digits: String = rest[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        out.push_str(&rest[..at]);
        if digits.is_empty() {
            out.push('$');
            rest = &rest[at + 1..];
        } else {
            let n = arg_index(&digits, nargs)?;
            out.push_str(&format!("\\($a{n})"));
            rest = &rest[at + 1 + digits.len()..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_a_json_payload_factory() {
        let pf = r#"<payloadFactory media-type="json">
            <format>{"customer": {"name": "$1", "greeting": "Hi $1!", "id": $2, "tags": "$3"}}</format>
            <args>
                <arg evaluator="json" expression="$.order.name"/>
                <arg expression="json-eval($.order.id)"/>
                <arg evaluator="json" expression="$.order.tags[*]"/>
            </args>
        </payloadFactory>"#;
        let c = convert(pf).expect("converts");
        assert!(c.jq.contains("$a3"), "{}", c.jq);
    }

    #[test]
    fn names_what_does_not_convert() {
        let pf = r#"<payloadFactory media-type="xml" template-type="freemarker">
            <format key="conf:/t.xml"/>
            <args>
                <arg evaluator="xml" expression="//a"/>
                <arg expression="$ctx:prop"/>
                <arg evaluator="json" expression="$.a[?(@.x)]"/>
            </args>
        </payloadFactory>"#;
        let errs = convert(pf).expect_err("does not convert");
        assert_eq!(errs.len(), 6, "{errs:#?}");
        assert!(errs[0].contains("media-type"));
        assert!(errs[3].starts_with("arg 1"));
        assert!(errs[5].contains("filter"));
    }

    #[test]
    fn jsonpath_subset() {
        assert_eq!(jsonpath("$").as_deref(), Ok("."));
        assert_eq!(
            jsonpath("$.a['b c'][0]").as_deref(),
            Ok(". | .[\"a\"]? | .[\"b c\"]? | .[0]?")
        );
        assert!(jsonpath("$.a.length()").is_err());
        assert!(jsonpath("a.b").is_err());
    }

    #[test]
    fn placeholders_must_match_args() {
        let pf = r#"<payloadFactory media-type="json"><format>{"a": $2}</format><args><arg value="x"/></args></payloadFactory>"#;
        let errs = convert(pf).expect_err("no arg 2");
        assert!(errs[0].contains("$2"), "{errs:?}");
    }
}
