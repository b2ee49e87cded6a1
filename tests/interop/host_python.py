"""An agent host for taskrail's proxy tests, played by the official Python MCP SDK client.

It connects to an MCP server (the proxy) over stdio or Streamable HTTP, optionally lists
tools, makes one `tools/call` and reports what happened as JSON lines on stdout:

    {"event": "connected", "protocolVersion": ..., "server": ...}
    {"event": "tools", "names": [...]}
    {"event": "progress", "progress": 1.0, "message": "..."}
    {"event": "elicitation", "message": "..."}          (then the answer it gave)
    {"event": "result", "isError": false, "text": "...", "structured": ...}
    {"event": "error", "code": -32603, "message": "..."}
    {"event": "cancelled"}

    python host_python.py --stdio '["taskrail", "proxy", "URL"]' --call ask_name --elicit '{"name": "Ada"}'
    python host_python.py --url http://127.0.0.1:PORT/mcp --mode auto --tasks --call slow_count

--mode legacy opens a 2025-11-25 session (initialize); auto probes server/discover first
and speaks 2026-07-28 when the server answers it. --tasks declares the tasks extension
(fastmcp-tasks' client half, which then polls tasks/get and answers with tasks/update).
Without --elicit the host declares no elicitation. --cancel-after S cancels the call.
--header 'Name: value' (repeatable) sends a header with every HTTP request (e.g. the
listener's `Authorization: Bearer TOKEN`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import contextlib

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def run(a: argparse.Namespace) -> int:
    answer = json.loads(a.elicit) if a.elicit is not None else None

    async def on_elicit(context, params):
        emit(event="elicitation", message=getattr(params, "message", None))
        if a.elicit_delay:
            await anyio.sleep(a.elicit_delay)
        emit(event="elicitation_answered")
        return types.ElicitResult(action="accept", content=answer)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        emit(event="progress", progress=progress, message=message)

    if a.stdio:
        argv = json.loads(a.stdio)
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    elif a.header:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {}
        for h in a.header:
            name, sep, value = h.partition(":")
            if not sep or not name.strip():
                raise SystemExit(f"--header wants 'Name: value', got {h!r}")
            headers[name.strip()] = value.strip()
        http = create_mcp_http_client(headers=headers)
        server = streamable_http_client(a.url, http_client=http)
    else:
        server = a.url
    extensions = []
    if a.tasks:
        from fastmcp_tasks.client import TasksClientExtension

        extensions.append(TasksClientExtension(on_elicit if answer is not None else None))
    client = Client(
        server,
        mode=a.mode,
        client_info=types.Implementation(name=a.name, version="1.0"),
        elicitation_callback=on_elicit if answer is not None else None,
        extensions=extensions or None,
        read_timeout_seconds=a.timeout,
        cache=None,
    )
    async with contextlib.AsyncExitStack() as stack:
        if a.header and not a.stdio:
            # The SDK leaves a client it was given to its owner.
            await stack.enter_async_context(http)
        await stack.enter_async_context(client)
        info = client.server_info
        emit(
            event="connected",
            protocolVersion=client.protocol_version,
            server=info.name if info else None,
        )
        if a.list:
            tools = await client.list_tools()
            emit(event="tools", names=[t.name for t in tools.tools])
        if a.ping:
            await client.send_ping()
            emit(event="pong")
        if not a.call:
            return 0
        emit(event="calling", tool=a.call)
        arguments = json.loads(a.args)
        try:
            with anyio.move_on_after(a.cancel_after) as scope:
                result = await client.call_tool(
                    a.call,
                    arguments,
                    progress_callback=on_progress if a.progress else None,
                )
            if scope.cancelled_caught:
                emit(event="cancelled")
                # Give the cancellation notification time to leave before the session ends.
                await anyio.sleep(1.0)
                return 0
        except MCPError as e:
            emit(event="error", code=e.error.code, message=e.error.message)
            return 0
        emit(
            event="result",
            isError=bool(result.is_error),
            text=text_of(result),
            structured=result.structured_content,
        )
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", help="JSON argv of the server command")
    where.add_argument("--url", help="Streamable HTTP endpoint")
    p.add_argument("--mode", default="legacy", help="legacy | auto | 2026-07-28")
    p.add_argument("--tasks", action="store_true", help="declare the tasks extension")
    p.add_argument("--name", default="python-host", help="clientInfo.name")
    p.add_argument("--elicit", help="JSON content to accept elicitations with")
    p.add_argument("--elicit-delay", type=float, default=0.0)
    p.add_argument("--progress", action="store_true", help="ask for progress")
    p.add_argument("--cancel-after", type=float, default=None)
    p.add_argument("--list", action="store_true", help="list tools first")
    p.add_argument("--ping", action="store_true")
    p.add_argument("--call", help="tool to call")
    p.add_argument("--args", default="{}", help="JSON arguments")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--header", action="append", default=[], help="'Name: value' on every HTTP request")
    a = p.parse_args()
    sys.exit(anyio.run(run, a))


if __name__ == "__main__":
    main()
