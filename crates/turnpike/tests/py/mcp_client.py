"""The official MCP Python SDK's Streamable HTTP client against a gateway's MCP endpoint
(driven by mcp_e2e.rs). Prints one JSON object of what it saw; the Rust test asserts.

usage: mcp_client.py URL KEY STRANGER_KEY
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_util import result_of


async def agent(url, key):
    out = {}
    async with create_mcp_http_client(headers={"apikey": key}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["protocol_version"] = init.protocol_version
                out["server"] = init.server_info.name
                out["tools_capability"] = init.capabilities.tools is not None
                tools = await session.list_tools()
                out["tools"] = {
                    t.name: {"description": t.description, "schema": t.input_schema}
                    for t in tools.tools
                }
                await session.send_ping()
                out["get"] = result_of(await session.call_tool("getPet", {"petId": "a b/c", "fields": "name&tag"}))
                out["add"] = result_of(await session.call_tool("addPet", {"body": {"name": "Rex"}}))
                out["missing"] = result_of(await session.call_tool("getPet", {"petId": "missing"}))
                for name, args in [("nope", {}), ("getPet", {}), ("getPet", {"petId": "1", "x": 1})]:
                    try:
                        await session.call_tool(name, args)
                        out.setdefault("bad_calls", []).append("accepted")
                    except Exception as e:  # the SDK raises the JSON-RPC error
                        out.setdefault("bad_calls", []).append(getattr(getattr(e, "error", None), "code", str(e)))
    return out


async def refused(url, key):
    """An agent without (or with an unsubscribed) key: the SDK fails to initialise."""
    headers = {"apikey": key} if key else {}
    try:
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await asyncio.wait_for(session.initialize(), 20)
        return "initialized"
    except BaseException as e:  # an ExceptionGroup from the SDK's task group
        return type(e).__name__


async def raw_status(url, key):
    """The HTTP answer to an initialize, as the gateway gives it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream"}
    if key:
        headers["apikey"] = key
    async with httpx2.AsyncClient() as http:
        r = await http.post(url, json=body, headers=headers)
        return r.status_code


async def main():
    url, key, stranger = sys.argv[1:4]
    out = await agent(url, key)
    out["anonymous"] = await refused(url, None)
    out["anonymous_status"] = await raw_status(url, None)
    out["stranger_status"] = await raw_status(url, stranger)
    print(json.dumps(out))


asyncio.run(main())
