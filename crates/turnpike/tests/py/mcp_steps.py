"""The official MCP Python SDK's Streamable HTTP client running a list of steps against
one endpoint (driven by mcp_proxy_e2e.rs: a proxied server's governed tools, several
servers multiplexed). Prints one JSON object of what it saw; the Rust test asserts.

usage: mcp_steps.py URL KEY STEPS
STEPS is a JSON list of ["list"], ["call", tool, arguments] and ["progress", tool,
arguments]: a call with a progress callback that creates the file named by the
argument `gate` when the first progress arrives, recording the order in which the
progress events and the result came (`order`).
"""

import asyncio
import json
import pathlib
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_util import result_of


async def run(url, key, steps):
    out = {"calls": []}
    async with create_mcp_http_client(headers={"apikey": key}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["server"] = init.server_info.name
                out["protocol_version"] = init.protocol_version
                for step in steps:
                    if step[0] == "list":
                        tools = await session.list_tools()
                        out["tools"] = sorted(t.name for t in tools.tools)
                        continue
                    try:
                        if step[0] == "progress":
                            out["calls"].append(await with_progress(session, step[1], step[2]))
                            continue
                        r = await session.call_tool(step[1], step[2])
                        out["calls"].append(result_of(r))
                    except Exception as e:  # the SDK raises the JSON-RPC error
                        code = getattr(getattr(e, "error", None), "code", str(e))
                        out["calls"].append({"error": code})
    return out


async def with_progress(session, tool, arguments):
    """Calls `tool`; the first progress event opens the gate the remote waits for."""
    order = []

    async def progressed(progress, total, message):
        order.append(f"progress {progress:g}")
        pathlib.Path(arguments["gate"]).touch()

    r = await session.call_tool(tool, arguments, progress_callback=progressed)
    order.append("result")
    return {**result_of(r), "order": order}


url, key, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
print(json.dumps(asyncio.run(run(url, key, steps))))
