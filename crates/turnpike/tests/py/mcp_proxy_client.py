"""The official MCP Python SDK's Streamable HTTP client against a gateway proxying a
remote MCP server (driven by mcp_proxy_e2e.rs). Prints one JSON object of what it saw.

usage: mcp_proxy_client.py URL KEY
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def result_of(r):
    return {
        "is_error": bool(r.is_error),
        "text": r.content[0].text if r.content else None,
    }


async def agent(url, key):
    out = {"session_ids": [], "content_types": [], "logs": []}

    async def seen(response):
        if response.request.method == "POST":
            out["content_types"].append(response.headers.get("content-type", ""))
        if "mcp-session-id" in response.headers:
            out["session_ids"].append(response.headers["mcp-session-id"])

    async def logged(params):
        out["logs"].append(params.data)

    async with create_mcp_http_client(headers={"apikey": key}) as http:
        http.event_hooks["response"] = [seen]
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, logging_callback=logged) as session:
                init = await session.initialize()
                out["server"] = init.server_info.name
                tools = await session.list_tools()
                out["tools"] = {t.name: t.description for t in tools.tools}
                out["sum"] = result_of(await session.call_tool("sum", {"a": 2, "b": 40}))
                out["echo"] = result_of(await session.call_tool("echo", {"text": "hi"}))
                out["remote_session"] = result_of(await session.call_tool("session", {}))["text"]
                for name in ["secret", "add"]:
                    try:
                        await session.call_tool(name, {})
                        out.setdefault("refused", []).append("accepted")
                    except Exception as e:  # the SDK raises the JSON-RPC error
                        out.setdefault("refused", []).append(getattr(getattr(e, "error", None), "code", str(e)))
    return out


async def raw_status(url):
    """An initialize without a credential, as the gateway answers it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        r = await http.post(url, json=body, headers=headers)
        return r.status_code


async def main():
    url, key = sys.argv[1:3]
    out = await agent(url, key)
    out["anonymous_status"] = await raw_status(url)
    print(json.dumps(out))


asyncio.run(main())
