"""Lists an MCP server's tools and calls some, with the official MCP Python SDK's
Streamable HTTP client (driven by mcp_graphql_e2e.rs). Prints one JSON object: each
tool's input schema and annotations, and each call's result (or its JSON-RPC error
code); the Rust test asserts.

usage: mcp_calls.py URL '[["tool", {arguments}], ...]'
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_util import result_of


async def main():
    url, calls = sys.argv[1], json.loads(sys.argv[2])
    out = {"calls": []}
    async with create_mcp_http_client() as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                out["tools"] = {
                    t.name: {
                        "schema": t.input_schema,
                        "read_only": t.annotations.read_only_hint if t.annotations else None,
                    }
                    for t in tools.tools
                }
                for name, args in calls:
                    try:
                        r = await session.call_tool(name, args)
                        out["calls"].append(result_of(r))
                    except Exception as e:  # the SDK raises the JSON-RPC error
                        out["calls"].append({"error": getattr(getattr(e, "error", None), "code", str(e))})
    print(json.dumps(out))


# A server that never answers fails the test in a minute instead of hanging it.
asyncio.run(asyncio.wait_for(main(), 60))
