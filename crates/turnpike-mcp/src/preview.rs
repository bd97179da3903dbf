//! What the portals show of an API's MCP server without a gateway: every operation the
//! API offers as a tool candidate, whether the `mcp:` section selects it, and the tool it
//! is (or would be once selected) with its name, description and input schema. Built by
//! the same functions the gateway's compile uses, so the Publisher reviews exactly the
//! `tools/list` agents will get.

use rmcp::model::Tool;
use serde::Serialize;
use turnpike_model::mcp::McpSpec;
use turnpike_model::ApiSpec;

use crate::openapi::Operation;
use crate::tools::{build, default_name, describe, names, operations_of, tool};

/// One operation and its tool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// How the section's `tools[].operation` names it: the operationId, or `METHOD /path`.
    pub operation: String,
    pub method: String,
    pub path: String,
    /// Served as a tool (the section lists it, or lists none: then every one is).
    pub selected: bool,
    /// The name and description the tool has without the publisher's edits.
    pub default_name: String,
    pub default_description: String,
    /// The tool as `tools/list` lists it (the publisher's name and description applied).
    pub tool: Tool,
}

/// The candidates, and every problem the section has as the gateway would report it
/// (path below `mcp`, message): problems do not hide the candidates that could be read.
pub fn preview(spec: &McpSpec, api: &ApiSpec) -> (Vec<Candidate>, Vec<(String, String)>) {
    // A proxied server's tools are the remote's, known only by asking it.
    if spec.upstream.is_some() {
        return (Vec::new(), Vec::new());
    }
    let ops = match operations_of(spec, api) {
        Ok((ops, _)) => ops,
        Err(problems) => return (Vec::new(), problems),
    };
    let mut problems = build(spec, api).err().unwrap_or_default();
    let mut out = Vec::with_capacity(ops.len());
    for op in &ops {
        match candidate(spec, op) {
            Ok(c) => out.push(c),
            Err(e) if !problems.iter().any(|(_, m)| *m == e) => {
                problems.push((".openapi".into(), e));
            }
            Err(_) => {}
        }
    }
    (out, problems)
}

fn candidate(spec: &McpSpec, op: &Operation) -> Result<Candidate, String> {
    let entry = spec
        .tools
        .as_ref()
        .map(|list| list.iter().find(|t| names(op, &t.operation)));
    let selected = !matches!(entry, Some(None));
    let edit = entry.flatten();
    let default_name = default_name(op);
    let name = edit
        .and_then(|t| t.name.clone())
        .unwrap_or_else(|| default_name.clone());
    let def = tool(op, name, edit)?;
    let operation = match op.operation_id.as_deref() {
        Some(id) if !id.trim().is_empty() && !id.contains(' ') => id.to_owned(),
        _ => format!("{} {}", op.method, op.path),
    };
    Ok(Candidate {
        operation,
        method: op.method.to_string(),
        path: op.path.clone(),
        selected,
        default_name,
        default_description: describe(op),
        tool: def.tool,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::mcp::McpToolSpec;

    const DOC: &str = r#"
openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets/{petId}:
    get:
      operationId: getPet
      summary: One pet
      parameters:
        - {name: petId, in: path, required: true, schema: {type: integer}}
  /pets:
    post:
      summary: Add a pet
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string}}}
"#;

    fn spec(tools: Option<Vec<McpToolSpec>>) -> McpSpec {
        McpSpec {
            openapi: Some(DOC.into()),
            tools,
            ..McpSpec::default()
        }
    }

    #[test]
    fn every_operation_is_a_candidate_with_its_selection_and_edits() {
        let edit = McpToolSpec {
            operation: "getPet".into(),
            name: Some("fetch_pet".into()),
            description: Some("Reads a pet".into()),
            ..McpToolSpec::default()
        };
        let (list, problems) = preview(&spec(Some(vec![edit])), &ApiSpec::default());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(list.len(), 2);
        let find = |op: &str| list.iter().find(|c| c.operation == op).expect(op);
        let get = find("getPet");
        assert_eq!(
            (get.operation.as_str(), get.selected),
            ("getPet", true),
            "{get:?}"
        );
        assert_eq!(
            (&*get.tool.name, get.default_name.as_str()),
            ("fetch_pet", "getPet")
        );
        assert_eq!(get.tool.description.as_deref(), Some("Reads a pet"));
        assert_eq!(get.tool.input_schema["required"][0], "petId");
        let post = find("POST /pets");
        assert_eq!(
            (post.operation.as_str(), post.selected),
            ("POST /pets", false)
        );
        assert_eq!(&*post.tool.name, "post_pets");
        assert_eq!(post.tool.input_schema["required"][0], "body");
    }

    #[test]
    fn without_a_selection_every_operation_is_served() {
        let (list, problems) = preview(&spec(None), &ApiSpec::default());
        assert!(problems.is_empty());
        assert!(list.iter().all(|c| c.selected));
    }

    #[test]
    fn the_gateways_problems_are_reported_beside_the_candidates() {
        let bad = ["no_such_op", "getPet"].map(|op| McpToolSpec {
            operation: op.into(),
            name: Some("same".into()),
            ..McpToolSpec::default()
        });
        let (list, problems) = preview(&spec(Some(bad.to_vec())), &ApiSpec::default());
        assert_eq!(list.len(), 2);
        assert!(
            problems.iter().any(|(p, _)| p == ".tools[0].operation"),
            "{problems:?}"
        );
        let unreadable = McpSpec {
            openapi: Some("paths: 3".into()),
            ..McpSpec::default()
        };
        let (list, problems) = preview(&unreadable, &ApiSpec::default());
        assert!(list.is_empty() && !problems.is_empty());
    }
}
