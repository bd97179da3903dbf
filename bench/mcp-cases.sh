# The calls issue 31's MCP benchmarks compare (sourced by bench/mcp-callgrind.sh and
# bench/mcp-cpu.sh, after bench/lib.sh): one API as examples/mcp.yaml has it (API key +
# subscription, Unlimited tier, the OpenAPI's two operations as tools) in front of
# `turnpike echo --size 50`, each operation called as REST and as a tool:
#   get   REST  GET /pets/v1/pets/7?fields=name                      (50-byte answer)
#         MCP   tools/call getPet {"petId": "7", "fields": "name"}   (one session)
#   post  REST  POST /pets/v1/pets {"name": "Rex", "tag": "dog"}     (JSON echoed back)
#         MCP   tools/call addPet {"body": {"name": "Rex", "tag": "dog"}}
#               (the answer also parsed into structuredContent)
# The texts are exported for the scripts' Python and Lua parts. The JSON is written as
# Python's json.dumps writes it (the bytes the earlier runs sent).
export MCP_KEY=agent-key-1
export MCP_ENDPOINT=/mcp/pets/v1
export MCP_VERSION=2025-06-18
export MCP_GET_PATH='/pets/v1/pets/7?fields=name'
export MCP_POST_PATH=/pets/v1/pets
export MCP_PET='{"name": "Rex", "tag": "dog"}'
export MCP_GET_CALL='{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "getPet", "arguments": {"petId": "7", "fields": "name"}}}'
export MCP_POST_CALL='{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "addPet", "arguments": {"body": {"name": "Rex", "tag": "dog"}}}}'
export MCP_INITIALIZE='{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}'

# mcp_config ECHO_PORT: examples/mcp.yaml with its endpoint the echo on ECHO_PORT, written
# to $work/apis.yaml (its session bounds kept).
mcp_config() {
  sed "s#http://127.0.0.1:8080#http://127.0.0.1:$1#" examples/mcp.yaml >"$work/apis.yaml"
  grep -q "127.0.0.1:$1" "$work/apis.yaml" || { echo "examples/mcp.yaml names no endpoint" >&2; exit 1; }
}
