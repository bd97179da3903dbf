//! Which of a proxied server's tools agents see, and under which names: the `mcp:`
//! section's `tools:` (an allow list, each entry a remote tool with an optional new
//! name and description) and `deny_tools:`. Applied to every `tools/list` answer on
//! its way down and to every `tools/call` on its way up (a hidden tool is refused
//! before the remote hears of it; a renamed one is called by its remote name). An
//! entry's `scopes` and `throttling` govern the tool by its shown name (`govern.rs`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use turnpike_model::mcp::McpToolSpec;

use crate::govern::ToolRules;
use crate::tools::{valid_name, MAX_TOOL_NAME};

/// Most entries in `tools:` or `deny_tools:`, and most tools a `tools/list` answer of
/// the remote may hold.
pub(crate) const MAX_TOOLS: usize = 1000;

/// A tool as agents see it.
struct Exposed {
    name: String,
    description: Option<String>,
    scopes: Box<[String]>,
    throttling: Option<Box<str>>,
}

/// The section's filter (see the module doc).
pub(crate) struct Filter {
    /// Remote name -> how it is shown; `None`: every tool not denied, as named.
    allow: Option<HashMap<String, Exposed>>,
    /// Shown name -> remote name (the allow list's, inverted).
    inbound: HashMap<String, String>,
    /// Whether an entry has scopes or a throttling policy.
    governed: bool,
    deny: HashSet<String>,
}

impl Filter {
    /// The section's filter, `Ok(None)` when it lets every tool through unchanged;
    /// problems as (field below the section, message).
    pub(crate) fn build(
        tools: Option<&[McpToolSpec]>,
        deny_tools: Option<&[String]>,
    ) -> Result<Option<Filter>, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let deny: HashSet<String> = deny_tools.iter().copied().flatten().cloned().collect();
        if deny.len() > MAX_TOOLS {
            problems.push((".deny_tools".into(), format!("at most {MAX_TOOLS} names")));
        }
        let allow = tools.map(|list| {
            if list.len() > MAX_TOOLS {
                problems.push((".tools".into(), format!("at most {MAX_TOOLS} tools")));
            }
            let mut allow = HashMap::with_capacity(list.len());
            for (i, t) in list.iter().enumerate() {
                let at = format!(".tools[{i}]");
                let remote = &t.operation;
                if remote.is_empty() || remote.len() > MAX_TOOL_NAME {
                    let msg = format!("a remote tool's name: 1 to {MAX_TOOL_NAME} bytes");
                    problems.push((format!("{at}.tool"), msg));
                }
                if deny.contains(remote) {
                    problems.push((format!("{at}.tool"), format!("`{remote}` is also denied")));
                }
                let name = t.name.clone().unwrap_or_else(|| remote.clone());
                if !valid_name(&name) {
                    let msg =
                        format!("tool name `{name}`: 1 to {MAX_TOOL_NAME} of A-Z a-z 0-9 _ - .");
                    problems.push((format!("{at}.name"), msg));
                }
                let exposed = Exposed {
                    name,
                    description: t.description.clone(),
                    scopes: t.scopes.clone().into(),
                    throttling: t.throttling.as_deref().map(Box::from),
                };
                if allow.insert(remote.clone(), exposed).is_some() {
                    problems.push((format!("{at}.tool"), format!("`{remote}` is listed twice")));
                }
            }
            allow
        });
        let inbound: HashMap<String, String> = allow
            .iter()
            .flatten()
            .map(|(remote, e)| (e.name.clone(), remote.clone()))
            .collect();
        if allow.as_ref().is_some_and(|a| a.len() != inbound.len()) {
            problems.push((".tools".into(), "two tools are shown under one name".into()));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let governed = allow
            .iter()
            .flat_map(HashMap::values)
            .any(|e| !e.scopes.is_empty() || e.throttling.is_some());
        Ok((allow.is_some() || !deny.is_empty()).then_some(Filter {
            allow,
            inbound,
            deny,
            governed,
        }))
    }

    /// The scopes and limit of the tool agents call `shown` (`None`: it has neither).
    pub(crate) fn rules<'a>(&'a self, shown: &'a str) -> Option<ToolRules<'a>> {
        if !self.governed {
            return None;
        }
        let e = self.allow.as_ref()?.get(self.inbound.get(shown)?)?;
        (!e.scopes.is_empty() || e.throttling.is_some()).then_some(ToolRules {
            name: shown,
            scopes: &e.scopes,
            throttling: e.throttling.as_deref(),
        })
    }

    /// Every tool's throttling policy (to know whether any is counted).
    pub(crate) fn policies(&self) -> impl Iterator<Item = Option<&str>> {
        self.allow
            .iter()
            .flat_map(HashMap::values)
            .map(|e| e.throttling.as_deref())
    }

    /// The remote name of the tool agents call `shown`; `None` when they may not.
    pub(crate) fn to_remote<'a>(&'a self, shown: &'a str) -> Option<&'a str> {
        match &self.allow {
            Some(_) => self.inbound.get(shown).map(String::as_str),
            None => (!self.deny.contains(shown)).then_some(shown),
        }
    }

    /// Filters and renames the tools of a `tools/list` result in place; `Err` when the
    /// remote listed more than [`MAX_TOOLS`] or the result has no `tools` array.
    pub(crate) fn list(&self, result: &mut Value) -> Result<(), String> {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return Err("the remote's tools/list result has no `tools` array".into());
        };
        if tools.len() > MAX_TOOLS {
            return Err(format!("the remote listed more than {MAX_TOOLS} tools"));
        }
        tools.retain_mut(|tool| self.show(tool));
        Ok(())
    }

    /// Whether one listed tool is shown, renamed and described as the section says.
    fn show(&self, tool: &mut Value) -> bool {
        let Some(remote) = tool.get("name").and_then(Value::as_str) else {
            return false;
        };
        if self.deny.contains(remote) {
            return false;
        }
        let Some(allow) = &self.allow else {
            return true;
        };
        let Some(e) = allow.get(remote) else {
            return false;
        };
        if let Some(obj) = tool.as_object_mut() {
            obj.insert("name".into(), Value::String(e.name.clone()));
            if let Some(d) = &e.description {
                obj.insert("description".into(), Value::String(d.clone()));
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use turnpike_model::mcp::McpToolSpec;

    fn build(
        tools: Option<Vec<(&str, Option<&str>)>>,
        deny: &[&str],
    ) -> Result<Option<Filter>, Vec<(String, String)>> {
        let tools: Option<Vec<McpToolSpec>> = tools.map(|l| {
            l.into_iter()
                .map(|(op, name)| McpToolSpec {
                    operation: op.into(),
                    name: name.map(Into::into),
                    ..McpToolSpec::default()
                })
                .collect()
        });
        let deny: Vec<String> = deny.iter().map(|s| s.to_string()).collect();
        Filter::build(tools.as_deref(), Some(&deny))
    }

    #[test]
    fn an_allow_list_shows_and_calls_only_its_tools_under_their_new_names() {
        let f = build(Some(vec![("add", Some("sum")), ("echo", None)]), &[])
            .expect("valid")
            .expect("a filter");
        let mut r = json!({"tools": [{"name": "add"}, {"name": "echo"}, {"name": "secret"}]});
        f.list(&mut r).expect("listed");
        assert_eq!(r, json!({"tools": [{"name": "sum"}, {"name": "echo"}]}));
        assert_eq!(f.to_remote("sum"), Some("add"));
        assert_eq!(f.to_remote("echo"), Some("echo"));
        assert_eq!(f.to_remote("add"), None, "only by its shown name");
        assert_eq!(f.to_remote("secret"), None);
    }

    #[test]
    fn an_entrys_scopes_and_limit_govern_the_tool_by_its_shown_name() {
        let tools = vec![
            McpToolSpec {
                operation: "add".into(),
                name: Some("sum".into()),
                throttling: Some("TwoPerMin".into()),
                ..McpToolSpec::default()
            },
            McpToolSpec {
                operation: "rm".into(),
                scopes: vec!["admin".into()],
                ..McpToolSpec::default()
            },
            McpToolSpec {
                operation: "ls".into(),
                ..McpToolSpec::default()
            },
        ];
        let f = Filter::build(Some(&tools), None)
            .expect("valid")
            .expect("a filter");
        let sum = f.rules("sum").expect("governed");
        assert_eq!((sum.name, sum.throttling), ("sum", Some("TwoPerMin")));
        assert_eq!(
            f.rules("rm").expect("governed").scopes,
            ["admin".to_owned()]
        );
        assert!(f.rules("ls").is_none() && f.rules("add").is_none());
        let mut policies: Vec<_> = f.policies().collect();
        policies.sort();
        assert_eq!(policies, [None, None, Some("TwoPerMin")]);
    }

    #[test]
    fn a_deny_list_hides_its_tools_and_nothing_else() {
        let f = build(None, &["rm"]).expect("valid").expect("a filter");
        let mut r = json!({"tools": [{"name": "rm"}, {"name": "ls"}]});
        f.list(&mut r).expect("listed");
        assert_eq!(r, json!({"tools": [{"name": "ls"}]}));
        assert_eq!((f.to_remote("rm"), f.to_remote("ls")), (None, Some("ls")));
        assert!(build(None, &[]).expect("valid").is_none());
    }

    #[test]
    fn bad_sections_and_answers_are_named() {
        let problems = build(
            Some(vec![("a", Some("x y")), ("b", Some("c")), ("c", Some("c"))]),
            &["b"],
        )
        .err()
        .expect("refused");
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert!(fields.contains(&".tools[0].name"), "{problems:?}");
        assert!(fields.contains(&".tools[1].tool"), "{problems:?}");
        assert!(fields.contains(&".tools"), "{problems:?}");
        let f = build(None, &["x"]).expect("ok").expect("filter");
        assert!(f.list(&mut json!({"nope": 1})).is_err());
        let many: Vec<Value> = (0..=MAX_TOOLS)
            .map(|i| json!({"name": format!("t{i}")}))
            .collect();
        assert!(f.list(&mut json!({ "tools": many })).is_err());
    }
}
