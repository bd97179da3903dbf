//! OpenAI's Responses API (`POST /responses`) on the OpenAI front, served by chat
//! completions: a Responses request is put in the Chat Completions shape first
//! ([`request`]), so routing, guards, budgets, caches and every provider translation
//! work on it as on a chat call; the answer, whole ([`response`]) or streamed
//! ([`crate::responses_stream`]), is put back in the Responses shape. Stateless: the
//! gateway stores no response, so `previous_response_id`, `conversation` and
//! `background` are refused (400), as are built-in tools (web search, file search,
//! code interpreter, ...): only `function` tools have a chat equivalent.

use serde_json::{json, Map, Value};

use crate::usage::{self, Counts};

/// The request fields a Response object repeats back (as OpenAI's does).
const ECHOED: [&str; 8] = [
    "instructions",
    "max_output_tokens",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "text",
];

/// A Responses request in the Chat Completions shape, or why it has none (a client
/// message, answered 400).
pub fn request(body: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    for stateful in ["previous_response_id", "conversation"] {
        if body.get(stateful).is_some_and(|v| !v.is_null()) {
            return Err(format!(
                "`{stateful}` is not supported: this gateway keeps no response state; send the whole conversation in `input`"
            ));
        }
    }
    if body.get("background").and_then(Value::as_bool) == Some(true) {
        return Err("`background` is not supported: call with `stream` instead".into());
    }
    let mut messages = Vec::new();
    if let Some(i) = body.get("instructions").filter(|v| !v.is_null()) {
        let text = i.as_str().ok_or("`instructions` must be a string")?;
        messages.push(json!({"role": "system", "content": text}));
    }
    match body.get("input") {
        Some(Value::String(s)) => messages.push(json!({"role": "user", "content": s})),
        Some(Value::Array(items)) => {
            for (n, item) in items.iter().enumerate() {
                input_item(item, &mut messages).map_err(|e| format!("input[{n}]: {e}"))?;
            }
        }
        None | Some(Value::Null) => return Err("`input` is required".into()),
        Some(_) => return Err("`input` must be a string or an array of items".into()),
    }
    let mut out = Map::new();
    out.insert(
        "model".into(),
        body.get("model").cloned().unwrap_or(Value::Null),
    );
    out.insert("messages".into(), Value::Array(messages));
    sampling(body, &mut out)?;
    if let Some(tools) = body.get("tools").filter(|v| !v.is_null()) {
        out.insert("tools".into(), self::tools(tools)?);
    }
    if let Some(c) = body.get("tool_choice").filter(|v| !v.is_null()) {
        out.insert("tool_choice".into(), tool_choice(c)?);
    }
    if let Some(f) = body.get("text").and_then(|t| t.get("format")) {
        if let Some(rf) = response_format(f)? {
            out.insert("response_format".into(), rf);
        }
    }
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        out.insert("stream".into(), Value::Bool(true));
        // The usage chunk makes `response.completed`'s usage.
        out.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(out)
}

/// `max_output_tokens`, `temperature`, `top_p`, `parallel_tool_calls`, `user`,
/// `reasoning.effort`: their chat names.
fn sampling(body: &Map<String, Value>, out: &mut Map<String, Value>) -> Result<(), String> {
    if let Some(m) = body.get("max_output_tokens").filter(|v| !v.is_null()) {
        let n = m
            .as_u64()
            .ok_or("`max_output_tokens` must be a positive integer")?;
        out.insert("max_completion_tokens".into(), n.into());
    }
    for k in [
        "temperature",
        "top_p",
        "parallel_tool_calls",
        "user",
        "seed",
    ] {
        if let Some(v) = body.get(k).filter(|v| !v.is_null()) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(e) = body.get("reasoning").and_then(|r| r.get("effort")) {
        if !e.is_null() {
            out.insert("reasoning_effort".into(), e.clone());
        }
    }
    Ok(())
}

/// One `input` item as chat messages: a message, a function call (merged into the
/// assistant turn before it) or a function call's output.
fn input_item(item: &Value, messages: &mut Vec<Value>) -> Result<(), String> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    match kind {
        "message" => {
            let role = item["role"].as_str().ok_or("a message needs a `role`")?;
            let role = match role {
                "user" | "assistant" | "system" | "developer" => role,
                other => return Err(format!("unknown role {other:?}")),
            };
            messages.push(json!({"role": role, "content": content(&item["content"])?}));
        }
        "function_call" => {
            let call = json!({"id": item["call_id"], "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]}});
            if !(item["call_id"].is_string() && item["name"].is_string()) {
                return Err("a function_call needs `call_id` and `name`".into());
            }
            let last = messages.last_mut().filter(|m| m["role"] == "assistant");
            match last {
                Some(m) => match m.get_mut("tool_calls").and_then(Value::as_array_mut) {
                    Some(calls) => calls.push(call),
                    None => m["tool_calls"] = json!([call]),
                },
                None => messages
                    .push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
            }
        }
        "function_call_output" => {
            let output = match &item["output"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => return Err("a function_call_output needs an `output`".into()),
            };
            messages
                .push(json!({"role": "tool", "tool_call_id": item["call_id"], "content": output}));
        }
        // A reasoning item of an earlier answer: chat has no place for it.
        "reasoning" => {}
        other => return Err(format!("input items of type {other:?} are not supported")),
    }
    Ok(())
}

/// A message's content: a string as it is, parts as chat parts.
fn content(c: &Value) -> Result<Value, String> {
    let Some(parts) = c.as_array() else {
        return c
            .as_str()
            .map(|s| json!(s))
            .ok_or_else(|| "`content` must be a string or parts".into());
    };
    parts
        .iter()
        .map(|p| match p["type"].as_str() {
            Some("input_text" | "output_text") => Ok(json!({"type": "text", "text": p["text"]})),
            Some("refusal") => Ok(json!({"type": "text", "text": p["refusal"]})),
            Some("input_image") => {
                let url = p["image_url"]
                    .as_str()
                    .ok_or("an input_image needs an `image_url` (file ids are not supported)")?;
                let mut image = json!({"url": url});
                if let Some(d) = p.get("detail").filter(|d| d.is_string()) {
                    image["detail"] = d.clone();
                }
                Ok(json!({"type": "image_url", "image_url": image}))
            }
            Some(other) => Err(format!("content parts of type {other:?} are not supported")),
            None => Err("a content part needs a `type`".into()),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

fn tools(tools: &Value) -> Result<Value, String> {
    let list = tools.as_array().ok_or("`tools` must be an array")?;
    list.iter()
        .map(|t| match t["type"].as_str() {
            Some("function") => {
                let mut f = json!({"name": t["name"], "parameters": t.get("parameters").cloned().unwrap_or(json!({"type": "object"}))});
                for k in ["description", "strict"] {
                    if let Some(v) = t.get(k).filter(|v| !v.is_null()) {
                        f[k] = v.clone();
                    }
                }
                Ok(json!({"type": "function", "function": f}))
            }
            Some(other) => Err(format!(
                "built-in tools ({other:?}) are not supported by this gateway: only `function` tools"
            )),
            None => Err("a tool needs a `type`".into()),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

fn tool_choice(c: &Value) -> Result<Value, String> {
    match c {
        Value::String(s) if matches!(s.as_str(), "auto" | "none" | "required") => Ok(c.clone()),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
            Ok(json!({"type": "function", "function": {"name": o.get("name")}}))
        }
        _ => Err("`tool_choice` must be auto, none, required or a function".into()),
    }
}

/// `text.format` as chat's `response_format` (none for plain text).
fn response_format(f: &Value) -> Result<Option<Value>, String> {
    match f["type"].as_str() {
        None | Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let mut s = json!({"name": f["name"], "schema": f["schema"]});
            for k in ["strict", "description"] {
                if let Some(v) = f.get(k).filter(|v| !v.is_null()) {
                    s[k] = v.clone();
                }
            }
            Ok(Some(json!({"type": "json_schema", "json_schema": s})))
        }
        Some(other) => Err(format!("`text.format` of type {other:?} is not supported")),
    }
}

/// The request fields a Response repeats, taken from the client's body.
pub fn echoed(body: &Map<String, Value>) -> Map<String, Value> {
    ECHOED
        .iter()
        .filter_map(|k| body.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect()
}

/// A Response object: the fields every one has, around `output`.
pub(crate) fn object(
    id: &str,
    created: &Value,
    model: &Value,
    status: &str,
    output: Vec<Value>,
    echoed: &Map<String, Value>,
) -> Value {
    let mut r = json!({
        "id": format!("resp_{id}"), "object": "response", "created_at": created,
        "status": status, "model": model, "output": output, "error": null,
        "incomplete_details": null, "instructions": null, "max_output_tokens": null,
        "temperature": null, "top_p": null, "tools": [], "tool_choice": "auto",
        "parallel_tool_calls": true, "text": {"format": {"type": "text"}},
        "metadata": {}, "store": false, "usage": null,
    });
    for (k, v) in echoed {
        r[k] = v.clone();
    }
    r
}

/// The Responses `usage` of chat counts.
pub(crate) fn usage(c: Counts) -> Value {
    json!({"input_tokens": c.prompt, "input_tokens_details": {"cached_tokens": c.cached},
           "output_tokens": c.completion, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": c.prompt + c.completion})
}

/// Why a chat answer stopped short, as a Response's `incomplete_details.reason`.
pub(crate) fn incomplete(finish: Option<&str>) -> Option<&'static str> {
    match finish {
        Some("length") => Some("max_output_tokens"),
        Some("content_filter") => Some("content_filter"),
        _ => None,
    }
}

/// The output message item of an answer's text.
pub(crate) fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({"type": "message", "id": format!("msg_{id}"), "status": status, "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]})
}

/// A function call output item.
pub(crate) fn call_item(call_id: &Value, name: &Value, arguments: &str, status: &str) -> Value {
    let id = format!("fc_{}", call_id.as_str().unwrap_or_default());
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
           "arguments": arguments, "status": status})
}

/// A chat completion (the OpenAI front's answer) as a Response; none when it is not one.
pub fn response(chat: &Value, echoed: &Map<String, Value>) -> Option<Value> {
    let choice = chat.get("choices")?.get(0)?;
    let id = chat["id"].as_str().unwrap_or("gateway");
    let message = &choice["message"];
    let mut output = Vec::new();
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        output.push(message_item(id, text, "completed"));
    }
    if let Some(r) = message["refusal"].as_str() {
        output.push(
            json!({"type": "message", "id": format!("msg_{id}"), "status": "completed",
            "role": "assistant", "content": [{"type": "refusal", "refusal": r}]}),
        );
    }
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        let f = &call["function"];
        let args = f["arguments"].as_str().unwrap_or("{}");
        output.push(call_item(&call["id"], &f["name"], args, "completed"));
    }
    let reason = incomplete(choice["finish_reason"].as_str());
    let status = if reason.is_some() {
        "incomplete"
    } else {
        "completed"
    };
    let mut r = object(id, &chat["created"], &chat["model"], status, output, echoed);
    if let Some(reason) = reason {
        r["incomplete_details"] = json!({"reason": reason});
    }
    if let Some(c) = chat.get("usage").and_then(usage::from_openai) {
        r["usage"] = usage(c);
    }
    Some(r)
}

/// A whole chat answer's bytes as a Response's (as they were when they are not one).
pub(crate) fn answer(body: &bytes::Bytes, echoed: &Map<String, Value>) -> bytes::Bytes {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|chat| response(&chat, echoed))
        .and_then(|r| serde_json::to_vec(&r).ok())
        .map_or_else(|| body.clone(), bytes::Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> Result<Map<String, Value>, String> {
        request(v.as_object().expect("object"))
    }

    #[test]
    fn a_string_input_with_instructions_becomes_two_messages() {
        let out = req(
            json!({"model": "m", "instructions": "Be brief.", "input": "Hi",
            "max_output_tokens": 20, "temperature": 0, "stream": true}),
        )
        .expect("ok");
        assert_eq!(
            out["messages"],
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
        );
        assert_eq!(out["max_completion_tokens"], 20);
        assert_eq!(out["temperature"], 0);
        assert_eq!(out["stream_options"]["include_usage"], true);
    }

    #[test]
    fn items_with_calls_and_outputs_become_chat_turns() {
        let out = req(json!({"model": "m", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "low"}]},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "snow"}],
            "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "weather"}}))
        .expect("ok");
        let m = &out["messages"];
        assert_eq!(
            m[0]["content"][1]["image_url"],
            json!({"url": "data:image/png;base64,AA", "detail": "low"})
        );
        assert_eq!(m[1]["tool_calls"][0]["function"]["name"], "weather");
        assert_eq!(
            m[2],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "snow"})
        );
        assert_eq!(out["tools"][0]["function"]["name"], "weather");
        assert_eq!(out["tool_choice"]["function"]["name"], "weather");
    }

    #[test]
    fn state_and_built_in_tools_are_refused() {
        let e = req(json!({"model": "m", "input": "x", "previous_response_id": "resp_1"}))
            .expect_err("stateful");
        assert!(e.contains("previous_response_id"), "{e}");
        let e = req(json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}))
            .expect_err("built-in");
        assert!(e.contains("built-in"), "{e}");
        assert!(req(json!({"model": "m"})).is_err());
    }

    #[test]
    fn a_completion_becomes_a_response() {
        let chat = json!({"id": "c1", "created": 7, "model": "m", "choices": [{"index": 0, "finish_reason": "length",
            "message": {"role": "assistant", "content": "Hel", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
        let echoed = echoed(
            json!({"instructions": "x", "input": "y"})
                .as_object()
                .expect("object"),
        );
        let r = response(&chat, &echoed).expect("a completion");
        assert_eq!(r["object"], "response");
        assert_eq!(r["status"], "incomplete");
        assert_eq!(r["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(r["instructions"], "x");
        assert_eq!(
            r["output"][0]["content"][0],
            json!({"type": "output_text", "text": "Hel", "annotations": [], "logprobs": []})
        );
        assert_eq!(r["output"][1]["call_id"], "call_1");
        assert_eq!(r["usage"]["input_tokens"], 5);
        assert_eq!(r["usage"]["total_tokens"], 8);
    }
}
