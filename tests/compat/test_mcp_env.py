"""MCPEnv against a real MCP server process, over stdio and over streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from verifiers.testing import ScriptedClient

pytest.importorskip("mcp")

SERVER = Path(__file__).parent.parent / "fixtures" / "mcp_calc_server.py"
ROWS = [{"question": "add 2 and 3", "answer": "5"}]


@pytest.fixture
def http_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # also closes the stdout pipe


def _server(transport: str, http_url: str | None) -> dict[str, Any]:
    if transport == "stdio":
        return {"name": "calc", "command": sys.executable, "args": [str(SERVER), "stdio"]}
    return {"name": "calc", "url": http_url}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_tools_from_a_real_server(transport: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("http_url") if transport == "http" else None

    def correct(completion: Any, answer: str) -> float:
        return 1.0 if completion[-1].content == answer else 0.0

    env = vf.MCPEnv(
        mcp_servers=[_server(transport, url)],
        dataset=ROWS,
        rubric=vf.Rubric(funcs=[correct]),
    )
    try:
        names = sorted(t["function"]["name"] for t in env.oai_tools)
        assert names == ["add", "refuse", "shout"]
        add_schema = next(t for t in env.oai_tools if t["function"]["name"] == "add")
        assert set(add_schema["function"]["parameters"]["properties"]) == {"a", "b"}
        client = ScriptedClient(
            [
                {
                    "content": None,
                    "tool_calls": [
                        {"name": "add", "arguments": {"a": 2, "b": 3}},
                        {"name": "refuse", "arguments": {"reason": "not today"}},
                    ],
                },
                "5",
            ]
        )
        result = await env.evaluate(client=client, model="m", num_examples=1)
        record = result.records[0]
        assert record["error"] is None, record["error"]
        tool_messages = [m for m in record["completion"] if m["role"] == "tool"]
        assert tool_messages[0]["content"] == "5"
        # the server's error result reaches the model through error_formatter
        assert tool_messages[1]["content"].startswith("Error: ")
        assert "refuse" in tool_messages[1]["content"]
        assert record["reward"] == 1.0
        assert record["metrics"]["add_calls"] == 1.0
        assert record["metrics"]["total_tool_calls"] == 2.0
    finally:
        await env.close()
    assert not env._mcp_thread.is_alive()


def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    with pytest.raises(vf.InfraError, match="could not connect to MCP server 'gone'"):
        vf.MCPEnv(
            mcp_servers=[{"name": "gone", "command": "/nonexistent/mcp-server"}], dataset=ROWS
        )


def test_a_server_config_needs_a_command_or_url() -> None:
    with pytest.raises(vf.ConfigError, match="give a command"):
        vf.MCPEnv(mcp_servers=[{"name": "x"}], dataset=ROWS)
    with pytest.raises(vf.ConfigError, match="unknown key"):
        vf.MCPEnv(mcp_servers=[{"name": "x", "comand": "y"}], dataset=ROWS)
