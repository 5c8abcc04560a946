import os
import pathlib
import secrets

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.fixture
def store(tmp_path):
    """A state store folder and its key file, outside any workspace."""
    key = tmp_path / "state.key"
    key.write_text(secrets.token_hex(32))
    os.chmod(key, 0o600)
    return {"state_store": str(tmp_path / "store"), "state_key_file": str(key)}


@pytest.fixture
def everything():
    """The published MCP server `server-everything` over stdio, as `mcpServers` config
    (installed by scripts/install-test-servers)."""
    assert EVERYTHING.exists(), f"{EVERYTHING} is missing: run scripts/install-test-servers"
    return {"everything": {"command": "node", "args": [str(EVERYTHING), "stdio"]}}


def sleeper():
    """An async tool `slow` that sleeps for a minute, and the dict where it notes that it was
    cancelled."""
    import asyncio

    seen = {}

    async def slow() -> str:
        """Sleeps for a minute."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen["cancelled"] = True
            raise
        return "late"

    return slow, seen


async def until(seen, key, seconds=2.0):
    """Waits (at most `seconds`) until `seen[key]` is set."""
    import asyncio

    for _ in range(int(seconds / 0.02)):
        if seen.get(key):
            return
        await asyncio.sleep(0.02)
