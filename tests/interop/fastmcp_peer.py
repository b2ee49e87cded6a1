"""FastMCP + fastmcp-tasks test peer for taskrail's interop tests.

Speaks MCP 2026-07-28 with the SEP-2663 tasks extension (in-memory backend).

    python fastmcp_peer.py             # Streamable HTTP on 127.0.0.1, ephemeral port
    python fastmcp_peer.py --port 0    # same; a non-zero port pins it
    python fastmcp_peer.py --stdio     # stdio transport, nothing else on stdout
    python fastmcp_peer.py --oauth     # HTTP, protected by FastMCP's own in-memory OAuth
                                       # authorization server (dynamic registration,
                                       # PKCE, rotating refresh tokens)

In HTTP mode exactly one line goes to stdout, once the server answers HTTP:
    READY http://127.0.0.1:PORT/mcp
Everything else (logs) goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import time
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import McpError, ToolError
from fastmcp.server.dependencies import Progress
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from fastmcp_tasks.context import get_task_context

mcp = FastMCP("taskrail-fastmcp-peer")
# Tasks run at most this many at once (fastmcp-tasks' default is 10; the side-by-side
# benchmark raises it with TASKRAIL_PEER_CONCURRENCY to run all its tasks concurrently).
_CONCURRENCY = int(os.environ.get("TASKRAIL_PEER_CONCURRENCY", "0")) or None
mcp.add_extension(TasksExtension(url="memory://", concurrency=_CONCURRENCY))

# A short poll hint keeps polling clients quick in tests (the default is 5 s).
TASK = TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=500))


@mcp.tool(task=TASK)
async def slow_count(steps: int = 5, delay: float = 0.3, progress: Progress = Progress()) -> str:
    """Count to `steps`, sleeping `delay` seconds per step, reporting progress."""
    steps = max(0, min(steps, 1000))
    delay = max(0.0, min(delay, 30.0))
    await progress.set_total(steps)
    for i in range(1, steps + 1):
        await asyncio.sleep(delay)
        await progress.increment()
        await progress.set_message(f"step {i}/{steps}")
    return f"counted to {steps}"


@mcp.tool(task=TASK)
async def ask_name(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the user for a name (input_required), then greet them."""
    responses = ctx.input_responses or {}
    answer = responses.get("name")
    if answer is not None:
        content = getattr(answer, "content", None) or {}
        action = getattr(answer, "action", None)
        if action == "accept" and content.get("name"):
            return f"Hello, {content['name']}!"
        return f"No name given (action={action})"
    return mcp_types.InputRequiredResult(
        input_requests={
            "name": mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message="What is your name?",
                    requested_schema={
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "title": "Name", "description": "Your name"}
                        },
                        "required": ["name"],
                    },
                )
            )
        }
    )


def _content(answer, key):
    """The `content[key]` of an accepted elicitation answer, else None."""
    if getattr(answer, "action", None) != "accept":
        return None
    return (getattr(answer, "content", None) or {}).get(key)


@mcp.tool
async def confirm_now(ctx: Context, item: str = "the cache") -> str | mcp_types.InputRequiredResult:
    """Ask for a confirmation before answering: multi round-trip input, never a task."""
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is not None:
        confirmed = _content(answer, "confirm")
        state = ctx.request_state
        if confirmed:
            return f"cleared {item} (state {state})"
        return f"kept {item} (action={getattr(answer, 'action', None)}, state {state})"
    return mcp_types.InputRequiredResult(
        input_requests={
            "confirm": mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"Really clear {item}?",
                    requested_schema={
                        "type": "object",
                        "properties": {"confirm": {"type": "boolean", "title": "Clear it"}},
                        "required": ["confirm"],
                    },
                )
            )
        },
        request_state="round-1",
    )


@mcp.tool
async def haiku_now(ctx: Context, topic: str = "autumn") -> str | mcp_types.InputRequiredResult:
    """Ask the client's model for a haiku: multi round-trip sampling, never a task."""
    answer = (ctx.input_responses or {}).get("haiku")
    if answer is not None:
        content = getattr(answer, "content", None)
        text = getattr(content, "text", None)
        return f"haiku: {text} (model {getattr(answer, 'model', None)})"
    return mcp_types.InputRequiredResult(
        input_requests={
            "haiku": mcp_types.CreateMessageRequest(
                params=mcp_types.CreateMessageRequestParams(
                    messages=[
                        mcp_types.SamplingMessage(
                            role="user",
                            content=mcp_types.TextContent(type="text", text=f"Write a haiku about {topic}."),
                        )
                    ],
                    system_prompt="You are a poet.",
                    max_tokens=60,
                )
            )
        }
    )


@mcp.tool
async def roots_now(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """List the client's roots: multi round-trip roots/list, never a task."""
    answer = (ctx.input_responses or {}).get("roots")
    if answer is not None:
        uris = [str(r.uri) for r in getattr(answer, "roots", [])]
        return "roots: " + ", ".join(uris)
    return mcp_types.InputRequiredResult(input_requests={"roots": mcp_types.ListRootsRequest()})


@mcp.tool(task=TASK)
async def explode(seconds: float = 0.2) -> str:
    """Fail with a protocol error (task ends `failed` with `error`)."""
    await asyncio.sleep(max(0.0, min(seconds, 30.0)))
    raise McpError(code=-32603, message="explode: deliberate protocol failure")


@mcp.tool(task=TASK)
async def bad_lint(seconds: float = 0.2) -> str:
    """Fail as a tool error (task ends `completed` with `isError: true`)."""
    await asyncio.sleep(max(0.0, min(seconds, 30.0)))
    raise ToolError("lint failed: 3 problems found")


@mcp.tool(task=TASK)
async def long_sleep(seconds: float = 30.0) -> str:
    """Sleep for `seconds` (meant to be cancelled)."""
    await asyncio.sleep(max(0.0, min(seconds, 600.0)))
    return f"slept {seconds}s"


@mcp.tool
def quick_add(a: int, b: int) -> str:
    """Add two integers right away (not a task tool)."""
    return str(a + b)


@mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=500)))
async def required_task(seconds: float = 0.2) -> str:
    """Only runs as a task; without the tasks extension the call fails with -32021."""
    await asyncio.sleep(max(0.0, min(seconds, 30.0)))
    return "required task done"


# The benchmark tool's poll hint (bench/side_by_side.sh sets it; FastMCP's default is 5 s).
SLEEP_POLL_MS = int(os.environ.get("TASKRAIL_PEER_SLEEP_POLL_MS", "2000"))


@mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=SLEEP_POLL_MS)))
async def sleep_task(seconds: float = 1.0) -> str:
    """Sleep `seconds`, then finish. With TASKRAIL_PEER_DONE_LOG set, appends one JSON line
    `{"taskId": …, "done": <unix seconds>}` as the task returns (for benchmarks)."""
    await asyncio.sleep(max(0.0, min(seconds, 3600.0)))
    log = os.environ.get("TASKRAIL_PEER_DONE_LOG")
    if log:
        info = get_task_context()
        line = json.dumps({"taskId": info.task_id if info else None, "done": time.time()})
        with open(log, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    return f"slept {seconds}s"


async def _wait_http(port: int, timeout: float = 30.0) -> None:
    """Wait until the server answers an HTTP request on the port."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2)
            try:
                writer.write(
                    f"GET /health-probe HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
                )
                await writer.drain()
                line = await asyncio.wait_for(reader.readline(), 2)
                if line.startswith(b"HTTP/1."):
                    return
            finally:
                writer.close()
        except (OSError, asyncio.TimeoutError):
            pass
        if loop.time() > deadline:
            raise RuntimeError(f"server on port {port} did not answer within {timeout}s")
        await asyncio.sleep(0.05)


async def _exit_with_parent() -> None:
    """Stop when the process that started us goes away (no orphaned test servers)."""
    parent = os.getppid()
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _protect(port: int) -> None:
    """Put FastMCP's in-memory OAuth provider in front of the server (it is its own
    authorization server, on the same origin)."""
    from fastmcp.server.auth.auth import ClientRegistrationOptions
    from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider

    mcp.auth = InMemoryOAuthProvider(
        base_url=f"http://127.0.0.1:{port}",
        client_registration_options=ClientRegistrationOptions(enabled=True),
    )


async def _serve_http(port: int, oauth: bool = False) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    if oauth:
        _protect(port)
    server = asyncio.create_task(
        mcp.run_http_async(
            show_banner=False,
            transport="http",
            host="127.0.0.1",
            port=port,
            log_level="warning",
            sockets=[sock],
        )
    )
    watchdog = asyncio.create_task(_exit_with_parent())
    ready = asyncio.create_task(_wait_http(port))
    done, _ = await asyncio.wait({server, ready}, return_when=asyncio.FIRST_COMPLETED)
    if server in done:
        ready.cancel()
        server.result()  # raises if startup failed
        raise RuntimeError("server stopped before it was ready")
    ready.result()
    sys.stdout.write(f"READY http://127.0.0.1:{port}/mcp\n")
    sys.stdout.flush()
    try:
        await server
    finally:
        watchdog.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout")
    parser.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0 = ephemeral)")
    parser.add_argument("--oauth", action="store_true", help="require OAuth sign-in (in-memory provider)")
    args = parser.parse_args()
    if args.stdio:
        mcp.run(transport="stdio", show_banner=False)
    else:
        try:
            asyncio.run(_serve_http(args.port, args.oauth))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
