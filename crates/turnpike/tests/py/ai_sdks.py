"""The official OpenAI and Anthropic Python SDKs against a Turnpike AI API
(crates/turnpike/tests/ai_e2e.rs runs it): a chat call and a streamed chat call on
each front, a tool round trip on each, a provider error in each front's shape, and
the example tier's token budget spent until a call is refused 429.
Prints one JSON object of what each call saw; the Rust test asserts on it.

usage: ai_sdks.py GATEWAY_URL API_KEY
"""

import json
import sys
import time

import anthropic
import openai

gw, key = sys.argv[1], sys.argv[2]
out = {}

oa = openai.OpenAI(base_url=f"{gw}/ai/v1", api_key=key, max_retries=0)
an = anthropic.Anthropic(base_url=f"{gw}/ai", api_key=key, max_retries=0)

WEATHER_OA = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
WEATHER_AN = [{"name": "get_weather", "description": "The weather in a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]

# OpenAI front: a chat call.
r = oa.chat.completions.create(model="gpt-4o-mini", max_tokens=32,
                               messages=[{"role": "user", "content": "Say hello to Turnpike"}])
out["openai_chat"] = {"content": r.choices[0].message.content, "finish": r.choices[0].finish_reason,
                      "prompt": r.usage.prompt_tokens, "completion": r.usage.completion_tokens}

# OpenAI front: streamed; each chunk's arrival time.
arrivals, text = [], []
stream = oa.chat.completions.create(model="gpt-4o-mini", max_tokens=32, stream=True,
                                    messages=[{"role": "user", "content": "Count for me please"}])
for chunk in stream:
    arrivals.append(time.monotonic())
    if chunk.choices and chunk.choices[0].delta.content:
        text.append(chunk.choices[0].delta.content)
out["openai_stream"] = {"chunks": len(arrivals), "text": "".join(text),
                        "spread": arrivals[-1] - arrivals[0] if arrivals else 0}

# OpenAI front: a tool call and its result.
r = oa.chat.completions.create(model="gpt-4o-mini", max_tokens=64, tools=WEATHER_OA,
                               messages=[{"role": "user", "content": "Weather in Oslo?"}])
m = r.choices[0].message
calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in (m.tool_calls or [])]
out["openai_tool_call"] = {"finish": r.choices[0].finish_reason, "calls": calls}
if calls:
    r = oa.chat.completions.create(model="gpt-4o-mini", max_tokens=64, tools=WEATHER_OA, messages=[
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": calls[0]["id"], "type": "function",
             "function": {"name": calls[0]["name"], "arguments": calls[0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "snow, -3 C"}])
    out["openai_tool_result"] = {"finish": r.choices[0].finish_reason, "content": r.choices[0].message.content}

# Anthropic front: a message.
r = an.messages.create(model="claude-sonnet-4-5", max_tokens=32,
                       messages=[{"role": "user", "content": "Say hello to Turnpike"}])
out["anthropic_message"] = {"text": "".join(b.text for b in r.content if b.type == "text"),
                            "stop": r.stop_reason, "input": r.usage.input_tokens, "output": r.usage.output_tokens}

# Anthropic front: streamed; each text delta's arrival time.
arrivals, text, kinds = [], [], []
with an.messages.stream(model="claude-sonnet-4-5", max_tokens=32,
                        messages=[{"role": "user", "content": "Count for me please"}]) as s:
    for event in s:
        kinds.append(event.type)
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            arrivals.append(time.monotonic())
            text.append(event.delta.text)
    final = s.get_final_message()
out["anthropic_stream"] = {"deltas": len(arrivals), "text": "".join(text), "kinds": sorted(set(kinds)),
                           "spread": arrivals[-1] - arrivals[0] if arrivals else 0,
                           "stop": final.stop_reason, "output": final.usage.output_tokens}

# Anthropic front: a tool call and its result.
r = an.messages.create(model="claude-sonnet-4-5", max_tokens=64, tools=WEATHER_AN,
                       messages=[{"role": "user", "content": "Weather in Oslo?"}])
uses = [{"id": b.id, "name": b.name, "input": b.input} for b in r.content if b.type == "tool_use"]
out["anthropic_tool_use"] = {"stop": r.stop_reason, "uses": uses}
if uses:
    r = an.messages.create(model="claude-sonnet-4-5", max_tokens=64, tools=WEATHER_AN, messages=[
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": uses[0]["id"], "name": uses[0]["name"],
                                           "input": uses[0]["input"]}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0]["id"], "content": "snow, -3 C"}]}])
    out["anthropic_tool_result"] = {"stop": r.stop_reason,
                                    "text": "".join(b.text for b in r.content if b.type == "text")}

# Errors in each front's shape: an unknown model, a wrong key.
try:
    oa.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
except openai.APIStatusError as e:
    out["openai_error"] = {"status": e.status_code, "body": e.body}
try:
    an.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "x"}],
                       extra_headers={"x-api-key": "wrong-key"})
except anthropic.APIStatusError as e:
    out["anthropic_error"] = {"status": e.status_code, "body": e.body, "class": type(e).__name__}

# The provider's own error (echo --llm fails on `x-echo-error`), in each front's shape:
# OpenAI's as it came, Anthropic's translated from OpenAI's.
try:
    oa.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}],
                               extra_headers={"x-echo-error": "503"})
except openai.APIStatusError as e:
    out["openai_provider_error"] = {"status": e.status_code, "body": e.body}
try:
    an.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "x"}],
                       extra_headers={"x-echo-error": "400"})
except anthropic.APIStatusError as e:
    out["anthropic_provider_error"] = {"status": e.status_code, "body": e.body, "class": type(e).__name__}

# The example's tier allows a few thousand tokens a minute: calls of ~1,000 prompt tokens
# each (not paced: only answers stream at the provider's pace) spend it, and the next is
# refused 429 in OpenAI's shape with RateLimit headers in tokens.
spent = []
for _ in range(20):
    try:
        r = oa.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", max_tokens=1, messages=[{"role": "user", "content": "a " * 1000}])
        spent.append(r.parse().usage.total_tokens)
    except openai.RateLimitError as e:
        out["openai_budget"] = {"status": e.status_code, "body": e.body, "spent": spent,
                                "ratelimit": e.response.headers.get_list("ratelimit"),
                                "policy": e.response.headers.get_list("ratelimit-policy"),
                                "retry_after": e.response.headers.get("retry-after")}
        break

print(json.dumps(out))
