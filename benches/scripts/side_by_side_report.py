"""Summarise one side-by-side run (benches/scripts/side_by_side.sh): detection delays
against the peer's completion log, CPU and peak RSS from /usr/bin/time."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import sys


def load_jsonl(path: str) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def quantile(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_vals)))
    return sorted_vals[min(rank, len(sorted_vals)) - 1]


def timing(path: str) -> tuple[float, float, int, float]:
    """user, system seconds, max RSS kB, wall seconds (`/usr/bin/time -f '%U %S %M %e'`)."""
    with open(path, encoding="utf-8") as f:
        last = [l for l in f.read().splitlines() if l.strip()][-1]
    u, s, m, e = last.split()
    return float(u), float(s), int(m), float(e)


def side(name: str, detected_path: str, time_path: str, done: dict[str, float], ids: list[str]):
    det = {d["taskId"]: d for d in load_jsonl(detected_path)}
    delays = sorted(
        (det[t]["detected"] - done[t]) * 1000.0 for t in ids if t in det and t in done
    )
    u, s, m, e = timing(time_path)
    return {
        "name": name,
        "tasks": len(ids),
        "seen": len([t for t in ids if t in det]),
        "cpu": u + s,
        "rss_mb": m / 1024.0,
        "wall": e,
        "p50": quantile(delays, 0.5),
        "p99": quantile(delays, 0.99),
        "max": delays[-1] if delays else math.nan,
        "min": delays[0] if delays else math.nan,
    }


def gets_in_ledger(path: str) -> int:
    """tasks/get answers the watch recorded: one `poll`/`resync` event per answer that
    changed something, plus the `unchanged` count of each `polls` event."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        changed = db.execute("SELECT count(*) FROM events WHERE kind IN ('poll', 'resync')").fetchone()[0]
        quiet = db.execute(
            "SELECT coalesce(sum(json_extract(detail, '$.unchanged')), 0) FROM events WHERE kind = 'polls'"
        ).fetchone()[0]
    finally:
        db.close()
    return int(changed) + int(quiet)


def main() -> None:
    out, poll_ms = sys.argv[1], float(sys.argv[2])
    done = {d["taskId"]: d["done"] for d in load_jsonl(f"{out}/done.jsonl") if d.get("taskId")}
    rows = []
    for key, name in (("taskrail", "taskrail watch --json"), ("fastmcp", "FastMCP Client polling tasks/get")):
        if not os.path.exists(f"{out}/{key}.time"):
            continue
        ids = [l.strip() for l in open(f"{out}/{key}.ids", encoding="utf-8") if l.strip()]
        rows.append(side(name, f"{out}/{key}.detected", f"{out}/{key}.time", done, ids))
    t = rows[0]
    gets = gets_in_ledger(f"{out}/ledger.db")
    print(
        f"scaling: taskrail watch of {t['tasks']} tasks: tasks/get {gets}, CPU {t['cpu']:.2f} s = "
        f"{1e6 * t['cpu'] / max(gets, 1):.0f} us per tasks/get, peak RSS {t['rss_mb']:.1f} MB, "
        f"wall {t['wall']:.0f} s"
    )
    if len(rows) < 2:
        return
    print(f"side by side: same FastMCP 4.1.4 peer, pollIntervalMs {poll_ms:.0f}, rounds one after the other")
    print(f"{'follower':<34} {'tasks':>6} {'seen':>6} {'CPU s':>7} {'peak RSS MB':>12} {'detect p50 ms':>14} {'p99 ms':>8} {'max ms':>8}")
    for r in rows:
        print(
            f"{r['name']:<34} {r['tasks']:>6} {r['seen']:>6} {r['cpu']:>7.2f} {r['rss_mb']:>12.1f} "
            f"{r['p50']:>14.0f} {r['p99']:>8.0f} {r['max']:>8.0f}"
        )
    t, p = rows
    print(
        f"ratio (FastMCP / taskrail): CPU {p['cpu'] / max(t['cpu'], 1e-9):.1f}x, "
        f"peak RSS {p['rss_mb'] / max(t['rss_mb'], 1e-9):.1f}x; "
        f"taskrail detection max {t['max']:.0f} ms vs budget {poll_ms + 50:.0f} ms (one poll interval + 50)"
    )


if __name__ == "__main__":
    main()
