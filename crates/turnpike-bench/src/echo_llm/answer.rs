//! The provider-neutral core of `echo --llm`: what was asked ([`Prompt`], built by each
//! front's parser) and the deterministic answer to it ([`Answer`]), with exact token counts.
//!
//! The rules, in order, on the last message:
//! - a tool result: a text quoting it (`The tool returned: ...`);
//! - tools offered (and `tool_choice` not `none`): a call, with arguments derived from the
//!   tool's JSON schema ([`arguments_for`]), of the tool named after `call ` in the text,
//!   else of the one `tool_choice` names, else of the first offered;
//! - the text contains `lorem N`: N tokens of filler text (`The quick brown fox ...`, at
//!   most [`MAX_ANSWER_TOKENS`]);
//! - otherwise the text itself, echoed.
//!
//! `max_tokens` cuts a text answer (finish reason `length`).

use serde_json::{Map, Value};
use turnpike_tokens::Encoding;

/// The longest answer generated, whatever `lorem N` or `max_tokens` ask.
pub(super) const MAX_ANSWER_TOKENS: u64 = 100_000;
/// How deep [`arguments_for`] follows nested object schemas.
const MAX_SCHEMA_DEPTH: usize = 8;

/// What the renderers need to know about the call besides the answer.
pub(super) struct Call {
    pub id: String,
    pub created: u64,
    pub model: String,
    /// Prompt tokens to report as read from the provider's cache.
    pub cached: u64,
    pub omit_usage: bool,
}

/// What the last message of a prompt is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Last {
    Text(String),
    ToolResult(String),
}

/// A tool the request offers.
#[derive(Debug, Clone)]
pub(super) struct Tool {
    pub name: String,
    pub schema: Value,
}

/// What the request's `tool_choice` asks.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum ToolChoice {
    /// `auto`, `required`, `any`, or absent.
    #[default]
    Auto,
    None,
    Named(String),
}

/// A parsed request, whichever front it came through.
#[derive(Debug, Clone)]
pub(super) struct Prompt {
    pub model: String,
    pub last: Last,
    pub tools: Vec<Tool>,
    pub tool_choice: ToolChoice,
    pub max_tokens: Option<u64>,
    /// Counted by the front's rule (messages, tools, images).
    pub prompt_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finish {
    Stop,
    Length,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reply {
    /// The answer's text in the pieces a stream sends (joined: the whole text).
    Text {
        pieces: Vec<String>,
        finish: Finish,
    },
    ToolCall {
        name: String,
        arguments: Value,
    },
}

#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub reply: Reply,
    pub prompt_tokens: u64,
    /// Exact for what is sent: the text's tokens, or a call's name and arguments.
    pub completion_tokens: u64,
}

impl Answer {
    pub fn text(&self) -> String {
        match &self.reply {
            Reply::Text { pieces, .. } => pieces.concat(),
            Reply::ToolCall { .. } => String::new(),
        }
    }
}

/// The answer to `prompt`.
pub(super) fn answer(prompt: &Prompt) -> Answer {
    let enc = Encoding::for_model(&prompt.model);
    let text = match &prompt.last {
        Last::ToolResult(content) => format!("The tool returned: {content}"),
        Last::Text(text) => {
            if let Some(tool) = chosen_tool(text, prompt) {
                let arguments = arguments_for(&tool.schema, 0);
                let completion_tokens = enc.count(&tool.name) + enc.count(&arguments.to_string());
                return Answer {
                    reply: Reply::ToolCall {
                        name: tool.name.clone(),
                        arguments,
                    },
                    prompt_tokens: prompt.prompt_tokens,
                    completion_tokens,
                };
            }
            match lorem_request(text) {
                Some(n) => lorem(enc, n.min(MAX_ANSWER_TOKENS)),
                None if text.is_empty() => "(empty prompt)".to_owned(),
                None => text.clone(),
            }
        }
    };
    let cap = prompt
        .max_tokens
        .unwrap_or(MAX_ANSWER_TOKENS)
        .min(MAX_ANSWER_TOKENS);
    let (text, finish) = match enc.truncate(&text, cap) {
        Some((cut, _)) => (cut, Finish::Length),
        None => (text, Finish::Stop),
    };
    Answer {
        completion_tokens: enc.count(&text),
        reply: Reply::Text {
            pieces: enc.pieces(&text),
            finish,
        },
        prompt_tokens: prompt.prompt_tokens,
    }
}

/// The tool to call: none when none is offered or `tool_choice` is `none`; else the one
/// named after `call ` in `text`, the one `tool_choice` names, or the first.
fn chosen_tool<'a>(text: &str, prompt: &'a Prompt) -> Option<&'a Tool> {
    let tools = &prompt.tools;
    match &prompt.tool_choice {
        ToolChoice::None => None,
        _ if tools.is_empty() => None,
        choice => called_tool(text, tools)
            .or_else(|| match choice {
                ToolChoice::Named(n) => tools.iter().find(|t| &t.name == n),
                _ => None,
            })
            .or_else(|| tools.first()),
    }
}

/// The first offered tool whose name follows `call ` in `text`.
fn called_tool<'a>(text: &str, tools: &'a [Tool]) -> Option<&'a Tool> {
    tools.iter().find(|t| {
        text.match_indices("call ").any(|(i, _)| {
            let rest = &text[i + "call ".len()..];
            rest.strip_prefix(t.name.as_str())
                .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        })
    })
}

/// `N` from the first `lorem N` in `text`.
fn lorem_request(text: &str) -> Option<u64> {
    text.match_indices("lorem ").find_map(|(i, _)| {
        let digits: String = text[i + "lorem ".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .take(12)
            .collect();
        digits.parse().ok()
    })
}

/// Words that are one token each (with their leading space) in both encodings, so `n`
/// of them are exactly `n` tokens.
const LOREM: &[&str] = &[
    "The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog",
];

/// Exactly `n` tokens of filler text (every word is at least one token, so `n` words
/// cut to `n` tokens: exact when each is one).
fn lorem(enc: Encoding, n: u64) -> String {
    let words = usize::try_from(n).unwrap_or(usize::MAX);
    let text = LOREM
        .iter()
        .cycle()
        .take(words)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    match enc.truncate(&text, n) {
        Some((cut, _)) => cut,
        None => text,
    }
}

/// Deterministic arguments that satisfy a tool's JSON schema: each property of an object
/// (recursively), a string `"test"`, a number `1`, `true`, an empty array, an enum's
/// first value.
pub(super) fn arguments_for(schema: &Value, depth: usize) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.iter().find_map(Value::as_str).unwrap_or("object"),
        Some(Value::String(t)) => t.as_str(),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" if depth < MAX_SCHEMA_DEPTH => {
            let props = schema.get("properties").and_then(Value::as_object);
            let out: Map<String, Value> = props
                .into_iter()
                .flatten()
                .map(|(k, s)| (k.clone(), arguments_for(s, depth + 1)))
                .collect();
            Value::Object(out)
        }
        "object" => Value::Object(Map::new()),
        "integer" | "number" => Value::from(1),
        "boolean" => Value::Bool(true),
        "array" => Value::Array(Vec::new()),
        "null" => Value::Null,
        _ => Value::String("test".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(last: Last, tools: Vec<Tool>, max_tokens: Option<u64>) -> Prompt {
        Prompt {
            model: "gpt-4o-mini".into(),
            last,
            tools,
            tool_choice: ToolChoice::Auto,
            max_tokens,
            prompt_tokens: 7,
        }
    }

    fn weather() -> Tool {
        Tool {
            name: "get_weather".into(),
            schema: json!({"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "opts": {"type": "object", "properties": {"hourly": {"type": "boolean"}}}
            }}),
        }
    }

    #[test]
    fn echoes_the_text_with_exact_counts() {
        let a = answer(&prompt(
            Last::Text("Hello there, echo!".into()),
            vec![],
            None,
        ));
        assert_eq!(a.text(), "Hello there, echo!");
        assert_eq!(
            a.completion_tokens,
            Encoding::O200kBase.count("Hello there, echo!")
        );
        assert_eq!(a.prompt_tokens, 7);
        assert!(matches!(
            a.reply,
            Reply::Text {
                finish: Finish::Stop,
                ..
            }
        ));
    }

    #[test]
    fn lorem_gives_n_tokens_and_max_tokens_cuts_with_length() {
        let a = answer(&prompt(
            Last::Text("say lorem 50 please".into()),
            vec![],
            None,
        ));
        assert_eq!(a.completion_tokens, 50);
        let a = answer(&prompt(Last::Text("lorem 50".into()), vec![], Some(10)));
        assert_eq!(a.completion_tokens, 10);
        assert!(matches!(
            a.reply,
            Reply::Text {
                finish: Finish::Length,
                ..
            }
        ));
        assert!(a.text().starts_with("The quick brown"));
    }

    #[test]
    fn filler_text_is_exactly_n_tokens_in_both_encodings() {
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for n in [1, 2, 9, 10, 57, 200] {
                assert_eq!(enc.count(&lorem(enc, n)), n, "{enc:?} {n}");
            }
        }
    }

    #[test]
    fn call_names_a_tool_and_gets_schema_arguments() {
        let a = answer(&prompt(
            Last::Text("please call get_weather now".into()),
            vec![weather()],
            None,
        ));
        let Reply::ToolCall { name, arguments } = &a.reply else {
            panic!("{a:?}")
        };
        assert_eq!(name, "get_weather");
        assert_eq!(
            arguments,
            &json!({"city": "test", "days": 1, "unit": "celsius", "opts": {"hourly": true}})
        );
        // `call NAME` picks among the tools; without it, the first one is called; with
        // tool_choice none, none is.
        let other = Tool {
            name: "get_time".into(),
            schema: json!({}),
        };
        let tools = vec![weather(), other];
        let a = answer(&prompt(
            Last::Text("call get_time".into()),
            tools.clone(),
            None,
        ));
        assert!(
            matches!(&a.reply, Reply::ToolCall { name, .. } if name == "get_time"),
            "{a:?}"
        );
        let a = answer(&prompt(
            Last::Text("Weather in Oslo?".into()),
            tools.clone(),
            None,
        ));
        assert!(
            matches!(&a.reply, Reply::ToolCall { name, .. } if name == "get_weather"),
            "{a:?}"
        );
        let mut named = prompt(Last::Text("Weather?".into()), tools.clone(), None);
        named.tool_choice = ToolChoice::Named("get_time".into());
        assert!(
            matches!(&answer(&named).reply, Reply::ToolCall { name, .. } if name == "get_time")
        );
        named.tool_choice = ToolChoice::None;
        assert!(matches!(answer(&named).reply, Reply::Text { .. }));
    }

    #[test]
    fn a_tool_result_is_quoted() {
        let a = answer(&prompt(
            Last::ToolResult("21 degrees".into()),
            vec![weather()],
            None,
        ));
        assert_eq!(a.text(), "The tool returned: 21 degrees");
    }
}
