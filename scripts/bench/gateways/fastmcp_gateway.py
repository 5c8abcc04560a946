"""FastMCP's code mode as a gateway, set up as its documentation shows: a proxy in front of
MCP servers with the `CodeMode` transform (search, schemas, then Python run in pydantic-monty).

    python fastmcp_gateway.py MCP_CONFIG_JSON

MCP_CONFIG_JSON is a file of `{"mcpServers": {...}}`. It serves streamable HTTP on a free
loopback port and prints its /mcp address as the first line on stdout.
"""

import asyncio
import json
import socket
import sys

from fastmcp.experimental.transforms.code_mode import CodeMode
from fastmcp.server import create_proxy


async def main() -> None:
    with open(sys.argv[1]) as file:
        config = json.load(file)
    # The downstream servers speak MCP 2025-11-25 only: pin the proxy's own clients to
    # negotiation instead of mirroring the front's revision.
    proxy = create_proxy(config, name="fastmcp-code-mode", mode="auto")
    proxy.add_transform(CodeMode())
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    await proxy.run_http_async(show_banner=False, log_level="warning", sockets=[listener])


asyncio.run(main())
