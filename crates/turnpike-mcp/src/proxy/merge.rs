//! What a multiplexed endpoint makes of its remotes' answers: one `initialize` result
//! for the session (the API's name, the remotes' oldest protocol version, tools and the
//! first server's other capabilities, each remote's instructions), and one tool list of
//! every remote's tools named `<server>__<tool>`.

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::filter::{Filter, MAX_TOOLS};
use crate::tools::valid_name;

/// Between a server's name and its tool's in the names agents see.
pub(crate) const SEPARATOR: &str = "__";

/// Most pages of one remote's tool list followed (`nextCursor`).
pub(crate) const MAX_LIST_PAGES: usize = 10;

/// Who the endpoint says it is: the API.
pub(crate) struct Info {
    pub name: String,
    pub version: String,
}

/// The `initialize` result of a session joined by these servers (name, result), in the
/// section's order.
pub(crate) fn initialize(info: &Info, joined: &[(&str, Value)]) -> Value {
    // Dated versions: the oldest is the one every remote of the session speaks.
    let version = joined
        .iter()
        .filter_map(|(_, r)| r.get("protocolVersion")?.as_str())
        .min()
        .unwrap_or_default();
    // Other methods go to the first server: its capabilities, with tools.
    let mut caps = joined
        .first()
        .and_then(|(_, r)| r.get("capabilities")?.as_object().cloned())
        .unwrap_or_default();
    caps.insert("tools".into(), json!({}));
    let instructions: Vec<String> = joined
        .iter()
        .filter_map(|(name, r)| Some(format!("{name}: {}", r.get("instructions")?.as_str()?)))
        .collect();
    let mut result = Map::new();
    result.insert("protocolVersion".into(), version.into());
    result.insert("capabilities".into(), Value::Object(caps));
    result.insert(
        "serverInfo".into(),
        json!({"name": info.name, "version": info.version}),
    );
    if !instructions.is_empty() {
        result.insert("instructions".into(), instructions.join("\n\n").into());
    }
    Value::Object(result)
}

/// A `tools/list` request for a remote (`cursor`: the page after the last one).
pub(crate) fn list_request(id: &Value, cursor: Option<Value>) -> Bytes {
    let params = match cursor {
        Some(c) => json!({ "cursor": c }),
        None => json!({}),
    };
    let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
    Bytes::from(serde_json::to_vec(&m).unwrap_or_default())
}

/// Adds one page of a remote's tools (filtered) to `tools`; `Err` past [`MAX_TOOLS`].
pub(crate) fn page(
    filter: Option<&Filter>,
    result: &mut Value,
    tools: &mut Vec<Value>,
) -> Result<(), String> {
    match filter {
        Some(f) => f.list(result)?,
        None => {
            let n = result.get("tools").and_then(Value::as_array).map(Vec::len);
            match n {
                None => return Err("the remote's tools/list result has no `tools` array".into()),
                Some(n) if n > MAX_TOOLS => {
                    return Err(format!("the remote listed more than {MAX_TOOLS} tools"))
                }
                Some(_) => {}
            }
        }
    }
    if let Some(Value::Array(page)) = result.get_mut("tools").map(Value::take) {
        tools.extend(page);
    }
    if tools.len() > MAX_TOOLS {
        return Err(format!("the remote listed more than {MAX_TOOLS} tools"));
    }
    Ok(())
}

/// A server's tools under the names agents call them by; a tool whose prefixed name is
/// not a valid tool name (over 128 bytes, odd characters) is left out.
pub(crate) fn prefixed(server: &str, tools: Vec<Value>) -> impl Iterator<Item = Value> + '_ {
    tools.into_iter().filter_map(move |mut tool| {
        let name = tool.get("name")?.as_str()?;
        // A single server (legacy transport) is not prefixed.
        let shown = match server {
            "" => name.to_owned(),
            _ => format!("{server}{SEPARATOR}{name}"),
        };
        if !valid_name(&shown) {
            return None;
        }
        tool.as_object_mut()?
            .insert("name".into(), Value::String(shown));
        Some(tool)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_speaks_the_oldest_version_with_the_first_servers_capabilities() {
        let info = Info {
            name: "tools".into(),
            version: "v1".into(),
        };
        let a = json!({"protocolVersion": "2025-06-18", "capabilities": {"prompts": {}, "tools": {"listChanged": true}}, "instructions": "forecasts"});
        let b = json!({"protocolVersion": "2025-03-26", "capabilities": {"resources": {}}});
        let r = initialize(&info, &[("weather", a), ("git", b)]);
        assert_eq!(r["protocolVersion"], "2025-03-26");
        assert_eq!(r["capabilities"], json!({"prompts": {}, "tools": {}}));
        assert_eq!(r["serverInfo"], json!({"name": "tools", "version": "v1"}));
        assert_eq!(r["instructions"], "weather: forecasts");
    }

    #[test]
    fn tools_are_prefixed_and_invalid_names_left_out() {
        let long = "x".repeat(125);
        let tools = vec![
            json!({"name": "add", "x": 1}),
            json!({"name": long}),
            json!({"nope": 1}),
        ];
        let out: Vec<Value> = prefixed("git", tools).collect();
        assert_eq!(out, vec![json!({"name": "git__add", "x": 1})]);
        let mut tools = Vec::new();
        let many: Vec<Value> = (0..=MAX_TOOLS)
            .map(|i| json!({"name": format!("t{i}")}))
            .collect();
        assert!(page(None, &mut json!({ "tools": many }), &mut tools).is_err());
        assert!(page(None, &mut json!({"x": 1}), &mut tools).is_err());
        page(None, &mut json!({"tools": [{"name": "a"}]}), &mut tools).expect("a page");
        assert_eq!(tools.len(), 1);
    }
}
