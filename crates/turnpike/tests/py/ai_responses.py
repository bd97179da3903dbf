"""The official OpenAI Python SDK's Responses API (`client.responses.create`) against
one Turnpike AI API whose models go to an OpenAI, an Anthropic, a Gemini and a
Bedrock provider, all played by `turnpike echo --llm` (crates/turnpike/tests/
ai_responses_e2e.rs runs it). For each model: a call with instructions and a string
input, the same streamed (every event type seen, the text from the deltas, the final
Response), a function tool call and its output sent back as input items; what the
provider was sent (echo's /_echo/last). Then the stateful features the gateway
refuses. Prints one JSON object; the Rust test asserts.

usage: ai_responses.py GATEWAY_URL API_KEY ECHO_URL MODEL...
"""

import json
import sys
import urllib.request

import openai

gw, key, echo, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
oa = openai.OpenAI(base_url=f"{gw}/ai/v1", api_key=key, max_retries=0)

TOOL = [{"type": "function", "name": "get_weather", "description": "The weather in a city",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"], "additionalProperties": False}}]


def sent():
    with urllib.request.urlopen(f"{echo}/_echo/last") as r:
        last = json.load(r)
    return {"path": last["path"], "body": last["body"]}


def usage(u):
    return u and {"input": u.input_tokens, "output": u.output_tokens, "total": u.total_tokens}


def calls(model):
    out = {}
    r = oa.responses.create(model=model, instructions="Be brief.", input="Say hello to Turnpike",
                            max_output_tokens=32, temperature=0.5)
    out["whole"] = {"text": r.output_text, "status": r.status, "object": r.object,
                    "id": r.id, "usage": usage(r.usage), "instructions": r.instructions}
    out["whole_sent"] = sent()
    kinds, deltas, final = [], [], None
    for e in oa.responses.create(model=model, input=[{"role": "user", "content": "Count for me"}],
                                 max_output_tokens=32, stream=True):
        kinds.append(e.type)
        if e.type == "response.output_text.delta":
            deltas.append(e.delta)
        if e.type == "response.completed":
            final = e.response
    out["stream"] = {"kinds": kinds, "text": "".join(deltas),
                     "final_text": final.output_text if final else None,
                     "usage": usage(final.usage) if final else None}
    r = oa.responses.create(model=model, input="Weather in Oslo?", tools=TOOL, max_output_tokens=64)
    fc = [i for i in r.output if i.type == "function_call"]
    out["tool_call"] = [{"name": c.name, "arguments": c.arguments, "call_id": c.call_id} for c in fc]
    if fc:
        r = oa.responses.create(model=model, tools=TOOL, max_output_tokens=64, input=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"type": "function_call", "call_id": fc[0].call_id, "name": fc[0].name,
             "arguments": fc[0].arguments},
            {"type": "function_call_output", "call_id": fc[0].call_id, "output": "snow, -3 C"}])
        out["tool_result"] = {"text": r.output_text}
        out["tool_result_sent"] = sent()
    return out


def refused(**kw):
    try:
        oa.responses.create(model=models[0], input="x", **kw)
        return {"status": 200}
    except openai.APIStatusError as e:
        return {"status": e.status_code, "body": e.body}


result = {m: calls(m) for m in models}
result["refused"] = {
    "previous_response_id": refused(previous_response_id="resp_123"),
    "web_search": refused(tools=[{"type": "web_search"}]),
}
print(json.dumps(result))
