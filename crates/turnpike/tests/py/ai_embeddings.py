"""The official OpenAI Python SDK's `client.embeddings.create` against one Turnpike AI
API whose embedding models are on a Gemini and a Bedrock provider (Titan Text
Embeddings v2, Cohere Embed, and a family the gateway does not translate), all played
by `turnpike echo --llm` (crates/turnpike/tests/ai_fronts_e2e.rs runs it). For each
model: one text (the SDK's default base64 vectors), a batch of two (floats), a shorter
vector (`dimensions`), what the provider was sent (echo's /_echo/last), and the cosine
of the same text's vectors from the two calls and of two different texts. Prints one
JSON object; the Rust test asserts.

usage: ai_embeddings.py GATEWAY_URL API_KEY ECHO_URL
"""

import json
import math
import sys
import urllib.request

import openai

gw, key, echo = sys.argv[1], sys.argv[2], sys.argv[3]
oa = openai.OpenAI(base_url=f"{gw}/ai/v1", api_key=key, max_retries=0)
TEXTS = ["The capital of France", "Bananas are yellow"]


def sent():
    with urllib.request.urlopen(f"{echo}/_echo/last") as r:
        last = json.load(r)
    return {"path": last["path"], "body": last["body"], "auth": last["headers"].get("authorization")}


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def call(model, **kw):
    try:
        r = oa.embeddings.create(model=model, **kw)
    except openai.APIStatusError as e:
        return {"status": e.status_code, "body": e.body}, None
    s = sent()
    out = {"status": 200, "dims": [len(d.embedding) for d in r.data], "model": r.model,
           "prompt_tokens": r.usage.prompt_tokens, "sent": s, "auth": s.pop("auth")}
    return out, [d.embedding for d in r.data]


result = {}
for model in ["gemini-embed", "titan-embed", "cohere-embed", "nova-embed"]:
    m = {}
    m["one"], one = call(model, input=TEXTS[0])
    m["batch"], batch = call(model, input=TEXTS, encoding_format="float")
    m["short"], _ = call(model, input=TEXTS[0], dimensions=64 if model == "gemini-embed" else 256)
    if one and batch:
        m["same"] = cosine(one[0], batch[0])
        m["different"] = cosine(batch[0], batch[1])
    elif one:
        _, again = call(model, input=TEXTS[0], encoding_format="float")
        _, other = call(model, input=TEXTS[1])
        m["same"] = cosine(one[0], again[0])
        m["different"] = cosine(one[0], other[0])
    result[model] = m
print(json.dumps(result))
