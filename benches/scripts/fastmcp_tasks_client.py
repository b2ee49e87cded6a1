"""FastMCP-client side of the side-by-side benchmark (benches/scripts/side_by_side.sh).

    python fastmcp_tasks_client.py create URL N --base S --spread S --out ids.txt
        create N `sleep_task` tasks that all finish between base and base+spread
        seconds after the first one was created; writes one task id per line
    python fastmcp_tasks_client.py follow URL ids.txt --out detected.jsonl
        follow those tasks to the end with FastMCP's client: per task, `tasks/get`
        (fastmcp_tasks' own sender) every `pollIntervalMs` until terminal, at most 16
        requests in flight; one line {"taskId", "status", "detected"} per task as its
        terminal state is seen
    python fastmcp_tasks_client.py stamp --out detected.jsonl
        read `taskrail watch --json` lines on stdin and write the same kind of line,
        stamped on arrival, for each terminal one
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

TERMINAL = {"completed", "failed", "cancelled"}


async def create(url: str, n: int, base: float, spread: float, out: str) -> None:
    from fastmcp import Client
    from fastmcp_tasks.client import call_tool_task

    t0 = time.time()
    ids: list[str | None] = [None] * n
    sem = asyncio.Semaphore(32)
    async with Client(url, timeout=120) as client:

        async def one(i: int) -> None:
            async with sem:
                deadline = t0 + base + spread * (i % 100) / 100.0
                task = await call_tool_task(
                    client, "sleep_task", {"seconds": max(0.0, deadline - time.time())}
                )
                ids[i] = task.task_id

        await asyncio.gather(*(one(i) for i in range(n)))
    with open(out, "w", encoding="utf-8") as f:
        for tid in ids:
            f.write(f"{tid}\n")
    print(f"created {n} tasks in {time.time() - t0:.1f} s", file=sys.stderr)


async def follow(url: str, ids_file: str, out: str) -> None:
    from fastmcp import Client
    from fastmcp_tasks.client import _send_get

    ids = [line.strip() for line in open(ids_file, encoding="utf-8") if line.strip()]
    lines: list[str] = []
    # At most 16 requests in flight, like taskrail (more make the peer drop connections).
    sem = asyncio.Semaphore(16)
    async with Client(url, timeout=120) as client:

        async def one(tid: str) -> None:
            while True:
                async with sem:
                    current = await _send_get(client.session, tid)
                if current.status in TERMINAL:
                    break
                await asyncio.sleep((current.poll_interval_ms or 5000) / 1000.0)
            lines.append(
                json.dumps({"taskId": tid, "status": current.status, "detected": time.time()})
            )

        await asyncio.gather(*(one(t) for t in ids))
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def stamp(out: str) -> None:
    with open(out, "w", encoding="utf-8") as f:
        for line in sys.stdin:
            now = time.time()
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if v.get("status") in TERMINAL:
                f.write(json.dumps({"taskId": v.get("taskId"), "status": v["status"], "detected": now}) + "\n")
                f.flush()


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create")
    c.add_argument("url")
    c.add_argument("n", type=int)
    c.add_argument("--base", type=float, default=30.0)
    c.add_argument("--spread", type=float, default=20.0)
    c.add_argument("--out", required=True)
    f = sub.add_parser("follow")
    f.add_argument("url")
    f.add_argument("ids")
    f.add_argument("--out", required=True)
    s = sub.add_parser("stamp")
    s.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "create":
        asyncio.run(create(a.url, a.n, a.base, a.spread, a.out))
    elif a.cmd == "follow":
        asyncio.run(follow(a.url, a.ids, a.out))
    else:
        stamp(a.out)


if __name__ == "__main__":
    main()
