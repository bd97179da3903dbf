"""The official `openai` SDK against `turnpike echo --llm` (argv: base URL, API key).

Prints one JSON object of what the SDK saw; tests/echo_llm.rs asserts on it. Exits
non-zero when the SDK raised something other than what a step expects.
"""

import json
import sys
import time

import openai

BASE, KEY = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0)
MODEL = "gpt-4o-mini"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}]
out = {}

r = client.chat.completions.create(
    model=MODEL, messages=[{"role": "user", "content": "Hello, echo! Grüße 🚀"}])
out["chat"] = {
    "content": r.choices[0].message.content,
    "finish": r.choices[0].finish_reason,
    "usage": r.usage.model_dump(),
    "model": r.model,
}

r = client.chat.completions.create(
    model=MODEL, messages=[{"role": "user", "content": "lorem 50"}], max_tokens=10)
out["cut"] = {"content": r.choices[0].message.content, "finish": r.choices[0].finish_reason,
              "completion_tokens": r.usage.completion_tokens}

pieces, times, usage, finish = [], [], None, None
stream = client.chat.completions.create(
    model=MODEL, messages=[{"role": "user", "content": "lorem 20"}], stream=True,
    stream_options={"include_usage": True},
    extra_headers={"x-echo-tokens-per-second": "50", "x-echo-first-token-ms": "50"})
start = time.monotonic()
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.model_dump()
    for choice in chunk.choices:
        if choice.delta.content:
            pieces.append(choice.delta.content)
            times.append((time.monotonic() - start) * 1000)
        if choice.finish_reason:
            finish = choice.finish_reason
out["stream"] = {"pieces": pieces, "times_ms": times, "usage": usage, "finish": finish}

question = {"role": "user", "content": "Please call get_weather for Paris"}
r = client.chat.completions.create(model=MODEL, messages=[question], tools=TOOLS)
call = r.choices[0].message.tool_calls[0]
answer = client.chat.completions.create(model=MODEL, tools=TOOLS, messages=[
    question,
    r.choices[0].message.model_dump(exclude_none=True),
    {"role": "tool", "tool_call_id": call.id, "content": "18 degrees and sunny"},
])
args = ""
stream = client.chat.completions.create(model=MODEL, messages=[question], tools=TOOLS, stream=True)
for chunk in stream:
    for choice in chunk.choices:
        for tc in choice.delta.tool_calls or []:
            args += tc.function.arguments or ""
out["tools"] = {
    "finish": r.choices[0].finish_reason,
    "name": call.function.name,
    "arguments": json.loads(call.function.arguments),
    "streamed_arguments": json.loads(args),
    "answer": answer.choices[0].message.content,
}

errors = {}
for model, cls in [("error-429", openai.RateLimitError), ("error-500", openai.InternalServerError),
                   ("error-400", openai.BadRequestError)]:
    try:
        client.chat.completions.create(model=model, messages=[question])
        errors[model] = "no error"
    except cls as e:
        errors[model] = {"class": type(e).__name__, "status": e.status_code, "code": e.code,
                         "type": e.type, "retry_after": e.response.headers.get("retry-after")}
try:
    openai.OpenAI(base_url=BASE + "/v1", api_key="wrong", max_retries=0).models.list()
    errors["wrong-key"] = "no error"
except openai.AuthenticationError as e:
    errors["wrong-key"] = {"class": type(e).__name__, "status": e.status_code, "code": e.code}
out["errors"] = errors

e = client.embeddings.create(model="text-embedding-3-small",
                             input=["What is the capital of France?",
                                    "what is the capital of france?",
                                    "Bananas grow in warm climates"])
dot = lambda a, b: sum(x * y for x, y in zip(a, b))
vec = [d.embedding for d in e.data]
out["embeddings"] = {"n": len(vec), "dims": len(vec[0]), "same": dot(vec[0], vec[1]),
                     "other": dot(vec[0], vec[2]), "prompt_tokens": e.usage.prompt_tokens}
short = client.embeddings.create(model="text-embedding-3-small", input="hi", dimensions=64,
                                 encoding_format="float")
out["embeddings"]["short_dims"] = len(short.data[0].embedding)

c = client.completions.create(model="gpt-3.5-turbo-instruct", prompt="lorem 30", max_tokens=5)
out["completion"] = {"text": c.choices[0].text, "finish": c.choices[0].finish_reason,
                     "usage": c.usage.model_dump()}
out["models"] = [m.id for m in client.models.list()]
print(json.dumps(out))
