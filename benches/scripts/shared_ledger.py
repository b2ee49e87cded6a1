#!/usr/bin/env python3
"""Measurements of the shared ledger (README, "The shared ledger"), on the real binary.

    python3 benches/scripts/shared_ledger.py [--secs 60] [--bin target/release/taskrail]

1. Idle CPU of a dashboard (in tmux, on an idle `serve-demo`) for SECS seconds, with 0 and
   1,000 finished tasks in the ledger, without and with another process writing to the
   ledger once a second (one write transaction like taskrail's own: the change number is
   bumped and one task row stamped with it). CPU = utime + stime from /proc/PID/stat.
2. Latency of an answer given with `taskrail answer` while a `watch` follows the task
   (through the ledger's outbox): the outbox row's requested -> done time, and the wall
   time of the `taskrail answer` command.
3. Time to take a task over: a `watch` follows a task, a second one mirrors it; after
   `kill -9` of the first (its pid is gone) and after `kill -STOP` (its lease expires, 10 s),
   the time until the lease in the ledger names the other process.

Needs tmux and python3 (stdlib only). Prints one block per measurement and the machine line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def machine() -> str:
    load = open("/proc/loadavg").read().split()[:3]
    return f"machine: {os.cpu_count()} cores, load average {' '.join(load)}"


class Env:
    def __init__(self, binary: str):
        self.bin = binary
        self.dir = tempfile.mkdtemp(prefix="taskrail-shared-")
        self.db = os.path.join(self.dir, "ledger.db")
        self.procs: list[subprocess.Popen] = []
        self.tmux_sockets: list[str] = []

    def env(self) -> dict:
        e = dict(os.environ)
        e.update(TASKRAIL_DB=self.db, TASKRAIL_NO_NOTIFY="1")
        for k in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
            e.pop(k, None)
        return e

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.bin, "--log-file", os.path.join(self.dir, "cli.log"), *args],
            env=self.env(), capture_output=True, text=True, timeout=120,
        )

    def spawn(self, *args: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [self.bin, "--log-file", os.path.join(self.dir, "bg.log"), *args],
            env=self.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(p)
        return p

    def demo(self, *flags: str) -> str:
        p = subprocess.Popen([self.bin, "serve-demo", *flags], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        self.procs.append(p)
        url = p.stdout.readline().strip()
        threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
        return url

    def detach(self, url: str, tool: str, args: str) -> str:
        r = self.run("call", "--server", url, tool, "--args", args, "--detach")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["taskId"]

    def dashboard(self, args: list[str]) -> int:
        """Start the dashboard in a private tmux server; returns its pid."""
        sock = f"taskrail-bench-{os.getpid()}-{len(self.tmux_sockets)}"
        self.tmux_sockets.append(sock)
        cmd = " ".join(
            ["exec", "env", f"TASKRAIL_DB={self.db}", "TASKRAIL_NO_NOTIFY=1", self.bin,
             "--log-file", os.path.join(self.dir, "dash.log"), *args])
        subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120",
                        "-y", "35", cmd], check=True, env={**os.environ, "TERM": "xterm-256color"})
        out = subprocess.run(["tmux", "-L", sock, "display-message", "-p", "#{pane_pid}"],
                             capture_output=True, text=True, check=True)
        return int(out.stdout.strip())

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for s in self.tmux_sockets:
            subprocess.run(["tmux", "-L", s, "kill-server"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def writer(db: str, stop: threading.Event) -> None:
    """Once a second, one write transaction as taskrail writes one: a new change number,
    stamped on one task row (the newest), if any."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=5)
    while not stop.wait(1.0):
        conn.execute("BEGIN IMMEDIATE")
        seq = conn.execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'change_seq' RETURNING value"
        ).fetchone()[0]
        conn.execute("UPDATE tasks SET changed_seq = ? WHERE id = (SELECT max(id) FROM tasks)",
                     (seq,))
        conn.execute("COMMIT")
    conn.close()


def idle(binary: str, secs: int) -> None:
    print(f"1. idle dashboard, {secs} s each (CPU = utime + stime of the dashboard process)")
    for tasks in (0, 1000):
        for writing in (False, True):
            env = Env(binary)
            try:
                url = env.demo()
                if tasks:
                    subprocess.run([binary, "bench", "populate", "--tasks", str(tasks), "--db",
                                    env.db], check=True, capture_output=True)
                config = os.path.join(env.dir, "config.toml")
                with open(config, "w") as f:
                    f.write(f'[[server]]\nname = "bench"\nurl = "{url}"\n')
                pid = env.dashboard(["--config", config])
                time.sleep(5)  # start-up (resuming the ledger) is not idle time
                stop = threading.Event()
                w = threading.Thread(target=writer, args=(env.db, stop), daemon=True)
                if writing:
                    w.start()
                c0, t0 = cpu_seconds(pid), time.monotonic()
                time.sleep(secs)
                c1, t1 = cpu_seconds(pid), time.monotonic()
                stop.set()
                if writing:
                    w.join()
                used = c1 - c0
                print(f"   {tasks:>5} tasks, {'a writer 1/s' if writing else 'no writer   '}: "
                      f"{used:.2f} s CPU in {t1 - t0:.0f} s = {100 * used / (t1 - t0):.2f} % of one core")
            finally:
                env.close()


def answers(binary: str, n: int = 10) -> None:
    print(f"2. answer through the outbox ({n} answers, a watch follows the tasks)")
    env = Env(binary)
    try:
        url = env.demo()
        ids = [env.detach(url, "wait_for_input", '{"prompt":"Name it"}') for _ in range(n)]
        env.spawn("watch", "--server", url, *ids)
        conn = sqlite3.connect(env.db, timeout=5)
        # Wait until the follower holds every lease and has seen every request.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            held = conn.execute("SELECT count(*) FROM follows").fetchone()[0]
            asking = conn.execute(
                "SELECT count(*) FROM tasks WHERE status = 'input_required'").fetchone()[0]
            if held == n and asking == n:
                break
            time.sleep(0.1)
        walls = []
        for task_id in ids:
            snap = conn.execute("SELECT snapshot FROM tasks WHERE task_id = ?",
                                (task_id,)).fetchone()[0]
            key = next(iter(json.loads(snap)["inputRequests"]))
            t0 = time.monotonic()
            r = env.run("answer", "--server", url, task_id, key, "--json", '{"value":"x"}')
            walls.append(1000 * (time.monotonic() - t0))
            assert r.returncode == 0, r.stderr
        rows = conn.execute(
            "SELECT done_at - requested_at FROM outbox WHERE kind = 'answer' AND done_at IS NOT NULL"
        ).fetchall()
        lat = sorted(r[0] for r in rows)
        print(f"   outbox requested -> done: p50 {statistics.median(lat):.0f} ms, max {max(lat)} ms "
              f"({len(lat)} answers)")
        print(f"   `taskrail answer` wall time: p50 {statistics.median(walls):.0f} ms, "
              f"max {max(walls):.0f} ms")
    finally:
        env.close()


def owner_of(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT owner FROM follows").fetchone()
    return row[0] if row else None


def wait_owner(conn: sqlite3.Connection, pid: int, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        o = owner_of(conn)
        if o and o.startswith(f"{pid}:"):
            return
        time.sleep(0.05)
    raise SystemExit(f"process {pid} never held the lease")


def takeover(binary: str, rounds: int = 5) -> None:
    print(f"3. take over a task ({rounds} rounds each; time until the ledger's lease names "
          "the other process)")
    env = Env(binary)
    try:
        url = env.demo("--no-push", "--poll-interval", "500", "--time-scale", "3")
        task = env.detach(url, "import_rows", '{"count":100000}')
        conn = sqlite3.connect(env.db, timeout=5)

        def follower() -> subprocess.Popen:
            return env.spawn("--no-push", "watch", "--server", url, task)

        holder = follower()
        wait_owner(conn, holder.pid)
        for how, sig in (("kill -9 (pid gone)", signal.SIGKILL),
                         ("kill -STOP (lease expiry, ttl 10 s)", signal.SIGSTOP)):
            times = []
            for _ in range(rounds):
                mirror = follower()
                time.sleep(2)  # the mirror is up and has read the ledger
                t0 = time.monotonic()
                holder.send_signal(sig)
                wait_owner(conn, mirror.pid)
                times.append(time.monotonic() - t0)
                holder.send_signal(signal.SIGKILL)
                holder.wait()
                holder = mirror
            times.sort()
            print(f"   after {how}: min {times[0]:.2f} s, median {statistics.median(times):.2f} s, "
                  f"max {times[-1]:.2f} s")
    finally:
        env.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--secs", type=int, default=60)
    ap.add_argument("--bin", default=os.path.join(REPO, "target", "release", "taskrail"))
    ap.add_argument("--only", choices=["idle", "answers", "takeover"])
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} is missing: cargo build --release (or pass --bin)")
    if args.only in (None, "idle"):
        idle(args.bin, args.secs)
    if args.only in (None, "answers"):
        answers(args.bin)
    if args.only in (None, "takeover"):
        takeover(args.bin)
    print(machine())


if __name__ == "__main__":
    main()
