"""Per-tool governance, resources and prompts through the official MCP Python SDK's
Streamable HTTP client (driven by mcp_govern_e2e.rs), plus the raw HTTP answers the SDK
hides (status and headers). Prints one JSON object of what it saw; the Rust test asserts.

usage: mcp_govern.py URL READER_KEY ADMIN_KEY
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_util import result_of


async def sdk(url, key, calls, library=False):
    """Initialises as `key`, runs `calls` (tool, arguments) and, with `library`, reads
    the server's prompts and resources."""
    out = {"calls": []}
    async with create_mcp_http_client(headers={"apikey": key}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                caps = init.capabilities
                out["capabilities"] = {
                    "tools": caps.tools is not None,
                    "prompts": caps.prompts is not None,
                    "resources": caps.resources is not None,
                }
                if library:
                    prompts = await session.list_prompts()
                    out["prompts"] = {
                        p.name: [(a.name, bool(a.required)) for a in (p.arguments or [])]
                        for p in prompts.prompts
                    }
                    got = await session.get_prompt("triage", {"petId": "7", "symptom": "limping"})
                    out["prompt_text"] = got.messages[0].content.text
                    out["prompt_role"] = got.messages[0].role
                    try:
                        await session.get_prompt("triage", {})
                        out["prompt_missing_arg"] = "accepted"
                    except Exception as e:
                        out["prompt_missing_arg"] = getattr(getattr(e, "error", None), "code", str(e))
                    resources = await session.list_resources()
                    out["resources"] = {str(r.uri): r.mime_type for r in resources.resources}
                    guide = await session.read_resource("docs://guide")
                    out["guide"] = guide.contents[0].text
                    spec = await session.read_resource("docs://openapi")
                    out["openapi_starts"] = spec.contents[0].text[:14]
                for name, args in calls:
                    out["calls"].append(result_of(await session.call_tool(name, args)))
    return out


async def raw(url, key):
    """A session by hand: a tool call over its limit and one without the tool's scope,
    with their HTTP status and headers."""
    base = {"accept": "application/json, text/event-stream", "apikey": key}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}
    out = {}
    async with httpx2.AsyncClient() as http:
        r = await http.post(url, json=init, headers=base)
        headers = dict(base, **{"mcp-session-id": r.headers["mcp-session-id"]})

        async def call(i, name, args):
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": name, "arguments": args}}
            return await http.post(url, json=body, headers=headers)

        r = await call(2, "getPet", {"petId": "1"})
        out["throttled"] = {
            "status": r.status_code,
            "body": r.json(),
            "retry_after": r.headers.get("retry-after"),
            "ratelimit": r.headers.get("ratelimit"),
        }
        r = await call(3, "deletePet", {"petId": "1"})
        out["unscoped"] = {
            "status": r.status_code,
            "body": r.json(),
            "www_authenticate": r.headers.get("www-authenticate"),
        }
    return out


async def main():
    url, reader, admin = sys.argv[1:4]
    get = ("getPet", {"petId": "1"})
    out = {
        # The tool's policy lets two calls a minute through per application.
        "reader": await sdk(url, reader, [get, get, get], library=True),
        "raw": await raw(url, reader),
        # Another application has its own two, and the tool's scope.
        "admin": await sdk(url, admin, [get, get, ("deletePet", {"petId": "9"})]),
    }
    print(json.dumps(out))


# A server that never answers fails the test in a minute instead of hanging it.
asyncio.run(asyncio.wait_for(main(), 60))
