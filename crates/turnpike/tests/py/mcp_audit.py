"""Audited tool calls through the official MCP Python SDK's Streamable HTTP client
(driven by mcp_audit_e2e.rs): a call with a password among its arguments, one whose
arguments are over the API's audit cap, and a call of a tool the server does not have.
Prints one JSON object of what it saw; the Rust test asserts on the audit trail.

usage: mcp_audit.py URL API_KEY
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_util import result_of


async def main():
    url, key = sys.argv[1:3]
    out = {}
    async with create_mcp_http_client(headers={"apikey": key}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *rest):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out["session"] = rest[0]() if rest else None
                login = {"body": {"user": "ann", "password": "hunter2", "note": "call me"}}
                out["login"] = result_of(await session.call_tool("saveNote", login))
                big = {"body": {"user": "bob" + "x" * 5000, "note": "long"}}
                out["big"] = result_of(await session.call_tool("saveNote", big))
                try:
                    await session.call_tool("noSuchTool", {"password": "p"})
                    out["unknown"] = "accepted"
                except Exception as e:
                    out["unknown"] = getattr(getattr(e, "error", None), "code", str(e))
    print(json.dumps(out))


# A server that never answers fails the test in a minute instead of hanging it.
asyncio.run(asyncio.wait_for(main(), 60))
