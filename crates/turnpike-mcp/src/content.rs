//! What an MCP server offers beside its tools: **resources** (the section's `openapi:`
//! document at `docs://openapi`, and each of its `documents:` at `docs://{name}`) and
//! **prompts** (the section's `prompts:`, each a template of one user message whose
//! `{{argument}}`s are filled in by `prompts/get`). Both lists are serialized once at
//! compile; a server with neither advertises neither capability and answers their
//! methods with `Method not found`, as before.

use rmcp::model::{
    ErrorCode, GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourcesResult,
    Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResult,
    RequestId, Resource, ResourceContents, Role,
};
use serde_json::value::RawValue;
use serde_json::Value;
use turnpike_model::mcp::{McpDocumentSpec, McpPromptSpec, McpSpec};

use crate::rpc::{self, Refusal};
use crate::tools::valid_name;

/// Most prompts, and most documents, a section may declare.
pub const MAX_ENTRIES: usize = 100;
/// Most arguments of one prompt.
pub const MAX_PROMPT_ARGUMENTS: usize = 32;
/// Largest filled-in prompt text (a placeholder repeated under a long value could
/// otherwise multiply a 1 MiB message).
pub const MAX_PROMPT_BYTES: usize = 1 << 20;
/// The URI of the `openapi:` document.
pub const OPENAPI_URI: &str = "docs://openapi";

/// The resources and prompts of one server.
#[derive(Default)]
pub struct Library {
    prompts: Vec<McpPromptSpec>,
    /// (URI, MIME type, text) of each resource.
    documents: Vec<(String, String, String)>,
    prompt_list: Box<str>,
    resource_list: Box<str>,
}

impl Library {
    /// The section's resources and prompts, or every problem (path below `mcp`, message).
    pub fn build(spec: &McpSpec) -> Result<Library, Vec<(String, String)>> {
        let mut problems = Vec::new();
        check_names(
            spec.prompts.iter().map(|p| &*p.name),
            ".prompts",
            &mut problems,
        );
        check_names(
            spec.documents.iter().map(|d| &*d.name),
            ".documents",
            &mut problems,
        );
        for (i, p) in spec.prompts.iter().enumerate() {
            if p.arguments.len() > MAX_PROMPT_ARGUMENTS {
                let msg = format!("at most {MAX_PROMPT_ARGUMENTS} arguments");
                problems.push((format!(".prompts[{i}].arguments"), msg));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut resources = Vec::new();
        let mut documents = Vec::new();
        if let Some(text) = &spec.openapi {
            let mime = openapi_mime(text);
            let r = Resource::new(OPENAPI_URI, "openapi")
                .with_title("OpenAPI document")
                .with_mime_type(mime)
                .with_size(text.len() as u64);
            resources.push(r);
            documents.push((OPENAPI_URI.to_owned(), mime.to_owned(), text.clone()));
        }
        for d in &spec.documents {
            let (r, doc) = document(d);
            resources.push(r);
            documents.push(doc);
        }
        let mut listed = ListResourcesResult::with_all_items(resources);
        listed.result_type = None;
        let mut prompts =
            ListPromptsResult::with_all_items(spec.prompts.iter().map(prompt).collect());
        prompts.result_type = None;
        Ok(Library {
            prompts: spec.prompts.clone(),
            resource_list: serde_json::to_string(&listed).unwrap_or_default().into(),
            prompt_list: serde_json::to_string(&prompts).unwrap_or_default().into(),
            documents,
        })
    }

    pub fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    pub fn has_resources(&self) -> bool {
        !self.documents.is_empty()
    }

    /// The answer to `method` when it is one of this library's, else `None`.
    pub(crate) fn answer(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&RawValue>,
    ) -> Option<Result<bytes::Bytes, Refusal>> {
        Some(match method {
            "prompts/list" if self.has_prompts() => Ok(rpc::raw_result(id, &self.prompt_list)),
            "resources/list" if self.has_resources() => {
                Ok(rpc::raw_result(id, &self.resource_list))
            }
            "prompts/get" if self.has_prompts() => rpc::params(id, params)
                .and_then(|p| self.get_prompt(&p).map_err(|e| invalid(id, e)))
                .map(|r| rpc::result(id.clone(), r)),
            "resources/read" if self.has_resources() => rpc::params(id, params)
                .and_then(|p| self.read(&p).map_err(|e| invalid(id, e)))
                .map(|r| rpc::result(id.clone(), r)),
            _ => return None,
        })
    }

    fn read(&self, p: &ReadResourceRequestParams) -> Result<ReadResourceResult, String> {
        let Some((uri, mime, text)) = self.documents.iter().find(|d| d.0 == p.uri) else {
            return Err(format!("no resource `{}`", p.uri));
        };
        let contents = ResourceContents::text(text.clone(), uri.clone()).with_mime_type(mime);
        let mut r = ReadResourceResult::new(vec![contents]);
        r.result_type = None;
        Ok(r)
    }

    fn get_prompt(&self, p: &GetPromptRequestParams) -> Result<GetPromptResult, String> {
        let Some(prompt) = self.prompts.iter().find(|q| q.name == p.name) else {
            return Err(format!("no prompt is named `{}`", p.name));
        };
        let given = p.arguments.clone().unwrap_or_default();
        if let Some(unknown) = given
            .keys()
            .find(|k| !prompt.arguments.iter().any(|a| &a.name == *k))
        {
            return Err(format!(
                "prompt `{}` has no argument `{unknown}`",
                prompt.name
            ));
        }
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !given.contains_key(&a.name))
        {
            return Err(format!("argument `{}` is required", missing.name));
        }
        let text = fill(&prompt.text, |name| match given.get(name) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
            None => prompt
                .arguments
                .iter()
                .any(|a| a.name == name)
                .then(String::new),
        })?;
        let mut r = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        r.description = prompt.description.clone();
        r.result_type = None;
        Ok(r)
    }
}

fn invalid(id: &RequestId, msg: String) -> Refusal {
    Refusal::answer(id.clone(), ErrorCode::INVALID_PARAMS, msg)
}

/// Names valid, distinct, and no more than [`MAX_ENTRIES`].
fn check_names<'a>(
    names: impl ExactSizeIterator<Item = &'a str>,
    at: &str,
    problems: &mut Vec<(String, String)>,
) {
    if names.len() > MAX_ENTRIES {
        problems.push((at.to_owned(), format!("at most {MAX_ENTRIES}")));
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, name) in names.enumerate() {
        if !valid_name(name) {
            let msg = format!("`{name}`: 1 to 128 of A-Z a-z 0-9 _ - .");
            problems.push((format!("{at}[{i}].name"), msg));
        } else if seen.contains(&name) || (at == ".documents" && name == "openapi") {
            problems.push((format!("{at}[{i}].name"), format!("`{name}` is taken")));
        }
        seen.push(name);
    }
}

fn document(d: &McpDocumentSpec) -> (Resource, (String, String, String)) {
    let uri = format!("docs://{}", d.name);
    let mime = d
        .mime_type
        .clone()
        .unwrap_or_else(|| "text/markdown".into());
    let mut r = Resource::new(uri.clone(), d.name.clone())
        .with_mime_type(mime.clone())
        .with_size(d.text.len() as u64);
    r.title = d.title.clone();
    r.description = d.description.clone();
    (r, (uri, mime, d.text.clone()))
}

fn prompt(p: &McpPromptSpec) -> Prompt {
    let arguments = p
        .arguments
        .iter()
        .map(|a| {
            let mut arg = PromptArgument::new(a.name.clone()).with_required(a.required);
            arg.description = a.description.clone();
            arg
        })
        .collect::<Vec<_>>();
    let mut out = Prompt::new(
        p.name.clone(),
        p.description.clone(),
        (!arguments.is_empty()).then_some(arguments),
    );
    out.title = p.title.clone();
    out
}

/// A JSON document's type, else YAML's.
fn openapi_mime(text: &str) -> &'static str {
    match text.trim_start().starts_with('{') {
        true => "application/json",
        false => "application/yaml",
    }
}

/// `template` with each `{{name}}` that `value` knows replaced (others kept as written),
/// at most [`MAX_PROMPT_BYTES`] long.
fn fill(template: &str, value: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open + 2..].find("}}").map(|c| open + 2 + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        match value(rest[open + 2..close].trim()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[open..close + 2]),
        }
        rest = &rest[close + 2..];
        if out.len() > MAX_PROMPT_BYTES {
            break;
        }
    }
    out.push_str(rest);
    if out.len() > MAX_PROMPT_BYTES {
        return Err(format!(
            "the filled-in prompt is over {MAX_PROMPT_BYTES} bytes"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_known_placeholders_and_keeps_the_rest() {
        let v = |n: &str| (n == "pet").then(|| "Rex".to_owned());
        assert_eq!(
            fill("Find {{ pet }} and {{other}} {{", v).as_deref(),
            Ok("Find Rex and {{other}} {{")
        );
        let big = "x".repeat(MAX_PROMPT_BYTES / 2 + 1);
        let long = |_: &str| Some(big.clone());
        assert!(fill("{{a}}{{a}}{{a}}", long).is_err());
    }

    #[test]
    fn names_are_checked() {
        let spec: McpSpec = serde_yaml::from_str(
            "prompts: [{name: a, text: x}, {name: a, text: y}]\ndocuments: [{name: openapi, text: z}]",
        )
        .expect("spec");
        let problems = Library::build(&spec).err().expect("problems");
        assert_eq!(
            problems.iter().map(|p| &*p.0).collect::<Vec<_>>(),
            [".prompts[1].name", ".documents[0].name"]
        );
    }
}
