"""The official OpenAI and Anthropic Python SDKs against one Turnpike AI API whose
models go to Gemini, Mistral, Bedrock (Converse, SigV4) and Azure OpenAI providers,
all played by `turnpike echo --llm` (crates/turnpike/tests/ai_providers_e2e.rs runs
it). For each model: a chat call, a streamed chat call, a tool call and its result
on the OpenAI front; a message, a streamed message and a tool use on the Anthropic
front; after each call, what the provider was sent (echo's /_echo/last). Then a
provider's error through each front. Prints one JSON object; the Rust test asserts.

usage: ai_providers.py GATEWAY_URL API_KEY ECHO_URL
"""

import json
import sys
import urllib.request

import anthropic
import openai

gw, key, echo = sys.argv[1], sys.argv[2], sys.argv[3]
oa = openai.OpenAI(base_url=f"{gw}/ai/v1", api_key=key, max_retries=0)
an = anthropic.Anthropic(base_url=f"{gw}/ai", api_key=key, max_retries=0)

TOOL_OA = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}]
TOOL_AN = [{"name": "get_weather", "description": "The weather in a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello to Turnpike"}]


def sent():
    with urllib.request.urlopen(f"{echo}/_echo/last") as r:
        last = json.load(r)
    h = last["headers"]
    keep = ["authorization", "api-key", "x-goog-api-key", "x-amz-date", "x-api-key", "apikey"]
    return {"path": last["path"], "query": last["query"], "body": last["body"],
            "headers": {k: h[k] for k in keep if k in h}}


def openai_calls(model):
    out = {}
    r = oa.chat.completions.create(model=model, max_tokens=32, messages=ASK)
    out["chat"] = {"content": r.choices[0].message.content, "finish": r.choices[0].finish_reason,
                   "prompt": r.usage.prompt_tokens, "completion": r.usage.completion_tokens}
    out["chat_sent"] = sent()
    chunks, text, usage = 0, [], None
    for c in oa.chat.completions.create(model=model, max_tokens=32, messages=ASK, stream=True,
                                        stream_options={"include_usage": True}):
        chunks += 1
        if c.choices and c.choices[0].delta.content:
            text.append(c.choices[0].delta.content)
        if c.usage:
            usage = c.usage.total_tokens
    out["stream"] = {"chunks": chunks, "text": "".join(text), "total": usage}
    out["stream_sent"] = sent()
    r = oa.chat.completions.create(model=model, max_tokens=64, tools=TOOL_OA,
                                   messages=[{"role": "user", "content": "Weather in Oslo?"}])
    m = r.choices[0].message
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in (m.tool_calls or [])]
    out["tool_call"] = {"finish": r.choices[0].finish_reason, "calls": calls}
    out["tool_sent"] = sent()
    if calls:
        r = oa.chat.completions.create(model=model, max_tokens=64, tools=TOOL_OA, messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": calls[0]["id"], "type": "function",
                 "function": {"name": calls[0]["name"], "arguments": calls[0]["arguments"]}}]},
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": "snow, -3 C"}])
        out["tool_result"] = {"content": r.choices[0].message.content}
        out["tool_result_sent"] = sent()
    return out


def anthropic_calls(model):
    out = {}
    r = an.messages.create(model=model, max_tokens=32, system="Be brief.",
                           messages=[{"role": "user", "content": "Say hello"}])
    out["message"] = {"text": "".join(b.text for b in r.content if b.type == "text"),
                      "stop": r.stop_reason, "input": r.usage.input_tokens, "output": r.usage.output_tokens}
    kinds, text = [], []
    with an.messages.stream(model=model, max_tokens=32,
                            messages=[{"role": "user", "content": "Count for me"}]) as s:
        for e in s:
            kinds.append(e.type)
            if e.type == "content_block_delta" and e.delta.type == "text_delta":
                text.append(e.delta.text)
        final = s.get_final_message()
    out["stream"] = {"kinds": sorted(set(kinds)), "text": "".join(text), "stop": final.stop_reason,
                     "output": final.usage.output_tokens}
    r = an.messages.create(model=model, max_tokens=64, tools=TOOL_AN,
                           messages=[{"role": "user", "content": "Weather in Oslo?"}])
    out["tool_use"] = {"stop": r.stop_reason,
                       "uses": [{"name": b.name, "input": b.input} for b in r.content if b.type == "tool_use"]}
    return out


out = {}
for model in ["gemini-2.0-flash", "mistral-small", "bedrock-haiku", "azure-4o"]:
    out[model] = {"openai": openai_calls(model), "anthropic": anthropic_calls(model)}

for model in ["gemini-broken", "bedrock-broken"]:
    try:
        oa.chat.completions.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "x"}])
    except openai.APIStatusError as e:
        out[model] = {"openai": {"status": e.status_code, "body": e.body}}
    try:
        an.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "x"}])
    except anthropic.APIStatusError as e:
        out[model]["anthropic"] = {"status": e.status_code, "body": e.body, "class": type(e).__name__}

print(json.dumps(out))
