"""The official OpenAI Python SDK against an AI API whose models have several targets
(crates/turnpike/tests/ai_routing_e2e.rs runs it and asserts on what it prints).

usage: ai_routing.py GATEWAY_URL API_KEY PHASE
  PHASE "routes": a weighted model called 40 times (which model answered each call),
  models whose first target fails (500, 429, refused connection, no answer in time;
  whole and streamed)
  and one whose every target fails, and a model the caller's tier does not allow.
  PHASE "recovered": the model whose first provider was down, called again.
Prints one JSON object.
"""

import collections
import json
import sys

import openai

gw, key, phase = sys.argv[1], sys.argv[2], sys.argv[3]
oa = openai.OpenAI(base_url=f"{gw}/ai/v1", api_key=key, max_retries=0)
HI = [{"role": "user", "content": "Say hello"}]
out = {}


def chat(model):
    r = oa.chat.completions.create(model=model, max_tokens=16, messages=HI)
    return {"model": r.model, "content": r.choices[0].message.content}


def stream(model):
    models, text = set(), []
    for chunk in oa.chat.completions.create(model=model, max_tokens=16, messages=HI, stream=True):
        models.add(chunk.model)
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    return {"models": sorted(models), "text": "".join(text)}


def refusal(model):
    try:
        oa.chat.completions.create(model=model, max_tokens=16, messages=HI)
        return {"status": 200}
    except openai.APIStatusError as e:
        return {"status": e.status_code, "body": e.body}


if phase == "routes":
    out["weighted"] = dict(collections.Counter(chat("weighted")["model"] for _ in range(40)))
    out["fail500"] = chat("fail500")
    out["fail500_stream"] = stream("fail500")
    out["fail429"] = chat("fail429")
    out["allfail"] = refusal("allfail")
    out["slow"] = chat("slow")
    # Last: the test reads the suspension this leaves while it lasts.
    out["refused"] = [chat("refused")["model"] for _ in range(3)]
    out["not_allowed"] = refusal("secret")
else:
    out["refused"] = chat("refused")
print(json.dumps(out))
