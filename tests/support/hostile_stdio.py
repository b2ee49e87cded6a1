"""A hostile MCP tasks server over stdio (2026-07-28, standard library only).

Tasks live in this process only, so a client that restarts it finds its tasks gone.
Modes (any combination):
  --oversize-first-get   answer the first tasks/get with one message over 16 MiB
  --stderr-flood BYTES   write BYTES to stderr without a newline, then complete the tasks
  --stderr-binary        write a non-UTF-8 byte to stderr at start, and a line per request
  --task-id ID           the id tools/call creates (JSON string escapes allowed)
  --starts FILE          append one line to FILE at every start
"""

import json
import sys
import threading

args = sys.argv[1:]


def flag(name):
    return name in args


def value(name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


if value("--starts"):
    with open(value("--starts"), "a") as f:
        f.write("start\n")

task_id = json.loads('"' + value("--task-id", "stdio-task-0001") + '"')
tasks = {}
flood_done = threading.Event()
state = {"gets": 0}
out_lock = threading.Lock()


def send(msg):
    data = json.dumps(msg).encode() + b"\n"
    with out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def err(text):
    # No try/except: a closed stderr kills this server, as it would a real one.
    sys.stderr.buffer.write(text)
    sys.stderr.buffer.flush()


def flood(total):
    chunk = b"e" * (1 << 20)
    sent = 0
    while sent < total:
        err(chunk)
        sent += len(chunk)
    flood_done.set()


if value("--stderr-flood"):
    threading.Thread(target=flood, args=(int(value("--stderr-flood")),), daemon=True).start()
else:
    flood_done.set()

if flag("--stderr-binary"):
    err(b"starting \xff\xfe not utf-8\n")


def task(tid):
    status = "completed" if flood_done.is_set() and state["gets"] > 1 else "working"
    t = {
        "taskId": tid,
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:0%dZ" % min(state["gets"], 9),
        "ttlMs": 3600000,
        "pollIntervalMs": 300,
    }
    if status == "completed":
        t["result"] = {"content": [{"type": "text", "text": "done"}]}
    return t


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    if flag("--stderr-binary"):
        err(b"request \xff\n")
    if "id" not in msg:
        continue
    mid, method = msg["id"], msg.get("method")
    if method == "server/discover":
        result = {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "serverInfo": {"name": "hostile-stdio", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": "work", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        tasks[task_id] = True
        result = dict(task(task_id), resultType="task")
    elif method == "tasks/get":
        tid = msg["params"]["taskId"]
        if tid not in tasks:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "Task not found"}})
            continue
        state["gets"] += 1
        if flag("--oversize-first-get") and state["gets"] == 1:
            big = dict(task(tid), statusMessage="x" * (17 << 20))
            send({"jsonrpc": "2.0", "id": mid, "result": big})
            continue
        result = task(tid)
    elif method == "subscriptions/listen":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no push"}})
        continue
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
        continue
    send({"jsonrpc": "2.0", "id": mid, "result": result})
