"""A remote MCP server for the proxy tests (mcp_proxy_e2e.rs): the official Python SDK's
own server (MCPServer, formerly FastMCP) over Streamable HTTP at /mcp on 127.0.0.1:0,
answering POSTs with Server-Sent Events (the SDK's default). Prints its URL, then serves.
Each tool it runs is appended to LOG, so a test knows what reached the remote.

With TRANSPORT `sse` it serves the legacy HTTP+SSE transport (2024-11-05) instead: the
event stream at /sse, messages POSTed to the /messages/ endpoint it names.

usage: mcp_remote.py NAME LOG [TRANSPORT]
"""

import asyncio
import os
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

name, log = sys.argv[1], sys.argv[2]
legacy = sys.argv[3:] == ["sse"]
server = MCPServer(name)


def ran(tool):
    with open(log, "a") as f:
        f.write(tool + "\n")


@server.tool(description="Adds two integers.")
def add(a: int, b: int) -> int:
    ran("add")
    return a + b


@server.tool(description="Says the text back, logging first (two events on one stream).")
async def echo(text: str, ctx: Context) -> str:
    ran("echo")
    await ctx.info(f"{name} echoes {text}")
    return f"{name}: {text}"


@server.tool(description="What the remote must never tell an agent.")
def secret() -> str:
    ran("secret")
    return "the remote's secret"


@server.tool(description="Fails: `tool` as a tool error (isError), else as a JSON-RPC error.")
def fail(how: str) -> str:
    ran("fail")
    if how == "tool":
        raise ToolError("the tool failed")
    raise MCPError(-32001, "the server refused")


@server.tool(description="Greets a user (its password is a secret an audit never keeps).")
def login(user: str, password: str) -> str:
    ran("login")
    return f"hello {user}"


@server.tool(description="Reports progress, then waits until the file GATE exists (the client "
             "makes it when the progress arrived) and answers whether it did within 10 s.")
async def progress(gate: str, ctx: Context) -> str:
    ran("progress")
    await ctx.report_progress(1, 2, "halfway")
    for _ in range(200):
        if os.path.exists(gate):
            await ctx.report_progress(2, 2, "done")
            return "the gate opened"
        await asyncio.sleep(0.05)
    return "the gate stayed shut"


@server.tool(description="Tells the client on its server stream (GET) that the tools changed.")
async def announce(ctx: Context) -> str:
    ran("announce")
    await ctx.session.send_tool_list_changed()
    return "announced"


@server.tool(description="The Mcp-Session-Id this server sees.")
def session(ctx: Context) -> str:
    ran("session")
    return (ctx.headers or {}).get("mcp-session-id", "")


sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.bind(("127.0.0.1", 0))
# Listening before the URL is printed: a test connects as soon as it reads it.
sock.listen(128)
port = sock.getsockname()[1]
if legacy:
    app = server.sse_app(host="127.0.0.1")
    print(f"remote mcp on http://127.0.0.1:{port}/sse", flush=True)
else:
    app = server.streamable_http_app(host="127.0.0.1")
    print(f"remote mcp on http://127.0.0.1:{port}/mcp", flush=True)
asyncio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve(sockets=[sock]))
