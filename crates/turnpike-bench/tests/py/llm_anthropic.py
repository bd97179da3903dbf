"""The official `anthropic` SDK against `turnpike echo --llm` (argv: base URL, API key).

Prints one JSON object of what the SDK saw; tests/echo_llm.rs asserts on it. Exits
non-zero when the SDK raised something other than what a step expects.
"""

import json
import sys
import time

import anthropic

BASE, KEY = sys.argv[1], sys.argv[2]
client = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0)
MODEL = "claude-sonnet-4-5"
TOOLS = [{
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
    },
}]
HELLO = [{"role": "user", "content": "Hello, Claude echo!"}]
out = {}

m = client.messages.create(model=MODEL, max_tokens=100, system="Be brief.", messages=HELLO)
out["chat"] = {"text": m.content[0].text, "stop": m.stop_reason, "usage": m.usage.model_dump(),
               "model": m.model}
out["count_tokens"] = client.messages.count_tokens(
    model=MODEL, system="Be brief.", messages=HELLO).input_tokens

m = client.messages.create(model=MODEL, max_tokens=7,
                           messages=[{"role": "user", "content": "lorem 40"}])
out["cut"] = {"text": m.content[0].text, "stop": m.stop_reason,
              "output_tokens": m.usage.output_tokens}

# (Also warms the SDK's stream parsing up, whose first use takes a few hundred ms, before
# the timed stream below.)
events = [e.type for e in client.messages.create(model=MODEL, max_tokens=50, messages=HELLO,
                                                 stream=True)]
out["events"] = events

pieces, times = [], []
with client.messages.stream(
        model=MODEL, max_tokens=1000, messages=[{"role": "user", "content": "lorem 20"}],
        extra_headers={"x-echo-tokens-per-second": "50", "x-echo-first-token-ms": "50",
                       "x-echo-cached-tokens": "3"}) as s:
    start = time.monotonic()
    for text in s.text_stream:
        pieces.append(text)
        times.append((time.monotonic() - start) * 1000)
    final = s.get_final_message()
out["stream"] = {"pieces": pieces, "times_ms": times, "usage": final.usage.model_dump(),
                 "stop": final.stop_reason}


question = {"role": "user", "content": "call get_weather for Paris"}
m = client.messages.create(model=MODEL, max_tokens=200, tools=TOOLS, messages=[question])
use = next(b for b in m.content if b.type == "tool_use")
answer = client.messages.create(model=MODEL, max_tokens=200, tools=TOOLS, messages=[
    question,
    {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                  "content": "18 degrees and sunny"}]},
])
with client.messages.stream(model=MODEL, max_tokens=200, tools=TOOLS, messages=[question]) as s:
    streamed = next(b for b in s.get_final_message().content if b.type == "tool_use")
out["tools"] = {"stop": m.stop_reason, "name": use.name, "input": use.input,
                "streamed_input": streamed.input, "answer": answer.content[0].text}

errors = {}
for model, cls in [("error-429", anthropic.RateLimitError),
                   ("error-529", anthropic.OverloadedError),
                   ("error-500", anthropic.InternalServerError)]:
    try:
        client.messages.create(model=model, max_tokens=10, messages=HELLO)
        errors[model] = "no error"
    except cls as e:
        errors[model] = {"class": type(e).__name__, "status": e.status_code,
                         "type": e.body["error"]["type"],
                         "retry_after": e.response.headers.get("retry-after")}
try:
    client.messages.create(model=MODEL, messages=HELLO, max_tokens=0)
    errors["bad"] = "no error"
except anthropic.BadRequestError as e:
    errors["bad"] = {"class": type(e).__name__, "status": e.status_code,
                     "type": e.body["error"]["type"]}
try:
    anthropic.Anthropic(base_url=BASE, api_key="wrong", max_retries=0).messages.create(
        model=MODEL, max_tokens=10, messages=HELLO)
    errors["wrong-key"] = "no error"
except anthropic.AuthenticationError as e:
    errors["wrong-key"] = {"class": type(e).__name__, "status": e.status_code,
                           "type": e.body["error"]["type"]}
out["errors"] = errors
print(json.dumps(out))
