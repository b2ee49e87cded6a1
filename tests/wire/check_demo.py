#!/usr/bin/env python3
"""Independent wire check of the taskrail demo MCP tasks server.

Standard library only; does not use the taskrail client. Usage:

    check_demo.py URL [--legacy-url URL] [--faults-url URL] [--chaos-url URL]

URL is a dual-era demo server (fast time scale). --legacy-url runs with --legacy
--drop-streams-every 0.5;
--faults-url with --no-push --ack-delay 400 --stale-snapshots; --chaos-url with
--http-503-rate 1. Exit status 0 means every check passed.
"""

import argparse
import base64
import http.client
import json
import queue
import sys
import threading
import traceback
import time
import urllib.parse

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
EXT = "io.modelcontextprotocol/tasks"
SUB = "io.modelcontextprotocol/subscriptionId"
RELATED = "io.modelcontextprotocol/related-task"
TIMEOUT = 10.0
CHECKS = 0


class Failure(Exception):
    pass


def check(cond, what):
    global CHECKS
    if not cond:
        raise Failure(what)
    CHECKS += 1


def split(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port, u.path or "/"


def exchange(url, method, body=None, headers=None, path=None):
    """One HTTP exchange; returns (status, lower-cased headers, body text)."""
    host, port, p = split(url)
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path or p, body=data, headers=headers or {})
        resp = conn.getresponse()
        text = resp.read().decode()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text
    finally:
        conn.close()


def parse_sse(text):
    """All JSON messages of a complete SSE body (comments and other fields skipped)."""
    messages, data = [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line == "":
            if data:
                messages.append(json.loads("\n".join(data)))
                data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
    if data:
        messages.append(json.loads("\n".join(data)))
    return messages


def decode_reply(status, headers, text, rid):
    ctype = headers.get("content-type", "")
    if ctype.startswith("application/json"):
        return json.loads(text) if text else None
    if ctype.startswith("text/event-stream"):
        for m in parse_sse(text):
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m
        raise Failure(f"SSE reply without a response for id {rid}: {text!r}")
    if not text:
        return None
    raise Failure(f"unexpected content type {ctype!r} (status {status})")


def encode_name(value):
    if value.isascii() and value.isprintable() and value == value.strip() and not value.startswith("=?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def meta(tasks=True, version=MODERN):
    caps = {"elicitation": {"form": {}}}
    if tasks:
        caps["extensions"] = {EXT: {}}
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "check_demo", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }


NEXT_ID = [100]


def next_id():
    NEXT_ID[0] += 1
    return NEXT_ID[0]


def modern(url, method, params=None, name=None, tasks=True, headers=None, version=MODERN, raw=False):
    """A modern request; returns (status, headers, message)."""
    rid = next_id()
    params = dict(params or {})
    if "_meta" not in params:
        params["_meta"] = meta(tasks, version)
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
    }
    if name is not None:
        h["Mcp-Name"] = encode_name(name)
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    status, rh, text = exchange(url, "POST", {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, h)
    if raw:
        return status, rh, text
    return status, rh, decode_reply(status, rh, text, rid)


def expect_error(reply, status, code, what):
    st, _, msg = reply
    check(st == status, f"{what}: HTTP {st}, expected {status} ({msg})")
    check(msg and msg.get("error", {}).get("code") == code, f"{what}: expected error {code}, got {msg}")
    return msg["error"]


def result_of(reply, what):
    st, _, msg = reply
    check(st == 200 and msg and "result" in msg, f"{what}: expected a result, got HTTP {st} {msg}")
    return msg["result"]


def call_tool(url, name, args=None, tasks=True):
    return modern(url, "tools/call", {"name": name, "arguments": args or {}}, name=name, tasks=tasks)


def get_task(url, tid):
    return result_of(modern(url, "tasks/get", {"taskId": tid}, name=tid), "tasks/get")


def wait_status(url, tid, statuses, getter=None):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        task = (getter or get_task)(url, tid)
        if task["status"] in statuses:
            return task
        time.sleep(0.03)
    raise Failure(f"task {tid[:8]} never reached {statuses}")


class Stream:
    """A long-lived SSE response read on a thread; messages land in a queue."""

    def __init__(self, url, method, headers, body=None):
        host, port, path = split(url)
        self.conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT * 3)
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, path, body=data, headers=headers)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.queue = queue.Queue()
        self.comments = 0
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            threading.Thread(target=self._read, daemon=True).start()
        else:
            self.body = self.resp.read().decode()

    def _read(self):
        data = []
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if line == "":
                    if data:
                        self.queue.put(json.loads("\n".join(data)))
                        data = []
                elif line.startswith(":"):
                    self.comments += 1
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
        except Exception as e:  # socket closed or timed out: the stream is over
            self.queue.put(("closed", repr(e)))
            return
        self.queue.put(("closed", "eof"))

    def next(self, pred=lambda m: True, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure("timed out waiting on an SSE stream")
            try:
                m = self.queue.get(timeout=left)
            except queue.Empty:
                raise Failure("timed out waiting on an SSE stream")
            if isinstance(m, tuple):
                raise Failure(f"SSE stream closed early ({m[1]})")
            if pred(m):
                return m

    def close(self):
        try:
            self.conn.sock and self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


# ---------------------------------------------------------------- modern checks


def check_modern(url):
    st, h, msg = modern(url, "server/discover")
    check(st == 200 and h.get("content-type", "").startswith("application/json"), "discover: 200 JSON")
    r = msg["result"]
    check(r["resultType"] == "complete", "discover: resultType complete")
    check(r["capabilities"]["extensions"][EXT] == {}, "discover: tasks extension advertised as {}")
    check("tools" in r["capabilities"], "discover: tools capability")
    check(MODERN in r["supportedVersions"], "discover: supportedVersions lists 2026-07-28")
    check("name" in r["_meta"]["io.modelcontextprotocol/serverInfo"], "discover: serverInfo in _meta")

    tools = result_of(modern(url, "tools/list"), "tools/list")["tools"]
    names = {t["name"] for t in tools}
    for n in ["render_report", "deploy", "import_rows", "flaky_job", "lint", "lookup", "survey", "wait_for_input"]:
        check(n in names, f"tools/list has {n}")
    check(all(t["inputSchema"]["type"] == "object" for t in tools), "every tool has an inputSchema")
    check(all("execution" not in t for t in tools), "modern tools carry no execution.taskSupport")

    # Envelope and header errors.
    expect_error(modern(url, "tools/list", {"_meta": {}}), 400, -32602, "missing _meta fields")
    expect_error(modern(url, "tools/list", headers={"MCP-Protocol-Version": LEGACY}), 400, -32020, "version header mismatch")
    expect_error(modern(url, "tools/list", headers={"MCP-Protocol-Version": None}), 400, -32020, "missing version header")
    expect_error(modern(url, "tools/list", headers={"Mcp-Method": "tools/call"}), 400, -32020, "Mcp-Method mismatch")
    expect_error(modern(url, "tools/call", {"name": "lookup", "arguments": {"key": "region"}}, name="lint"), 400, -32020, "Mcp-Name mismatch")
    err = expect_error(modern(url, "server/discover", version="1900-01-01"), 400, -32022, "unknown version")
    check(MODERN in err["data"]["supported"] and err["data"]["requested"] == "1900-01-01", "-32022 data")
    expect_error(modern(url, "tasks/list"), 404, -32601, "tasks/list on modern")
    expect_error(modern(url, "tasks/result", {"taskId": "x"}, name="x"), 404, -32601, "tasks/result on modern")
    expect_error(modern(url, "ping"), 404, -32601, "ping removed on modern")
    st, _, _ = exchange(url, "GET", headers={"Accept": "text/event-stream"})
    check(st == 405, f"modern GET: 405, got {st}")

    # Capability gating and plain results.
    err = expect_error(call_tool(url, "import_rows", tasks=False), 400, -32021, "required task tool without the extension")
    check(EXT in err["data"]["requiredCapabilities"]["extensions"], "-32021 names the extension")
    expect_error(modern(url, "tasks/get", {"taskId": "x"}, name="x", tasks=False), 400, -32021, "tasks/get without the extension")
    lookup_schema = next(t for t in tools if t["name"] == "lookup")["inputSchema"]
    check(lookup_schema["properties"]["key"].get("x-mcp-header") == "Key", "lookup.key is an x-mcp-header")
    expect_error(call_tool(url, "lookup", {"key": "region"}), 400, -32020, "x-mcp-header argument without Mcp-Param-Key")
    expect_error(modern(url, "tools/call", {"name": "lookup", "arguments": {"key": "region"}}, name="lookup",
                        headers={"Mcp-Param-Key": "owner"}), 400, -32020, "Mcp-Param-Key disagreeing with the argument")
    r = result_of(modern(url, "tools/call", {"name": "lookup", "arguments": {"key": "region"}}, name="lookup",
                         headers={"Mcp-Param-Key": "region"}), "lookup")
    check(r["resultType"] == "complete" and "taskId" not in r, "lookup answers without a task")
    check(r["content"][0]["text"] == "region = eu-west-1", "lookup text")
    encoded = modern(url, "tools/call", {"name": "lookup", "arguments": {"key": "owner"}},
                     headers={"Mcp-Name": "=?base64?" + base64.b64encode(b"lookup").decode() + "?=",
                              "Mcp-Param-Key": "owner"})
    check(result_of(encoded, "base64 Mcp-Name")["resultType"] == "complete", "base64 Mcp-Name accepted")
    r = result_of(call_tool(url, "lint", {"repo": "acme/web"}, tasks=False), "inline lint")
    check(r["resultType"] == "complete" and r["isError"] is True, "lint inline: isError result")
    expect_error(call_tool(url, "render_report", {"pages": "many"}), 200, -32602, "bad argument")
    expect_error(modern(url, "tasks/get", {"taskId": "no-such-task"}, name="no-such-task"), 200, -32602, "unknown task")
    expect_error(modern(url, "tasks/cancel", {"taskId": "no-such-task"}, name="no-such-task"), 200, -32602, "cancel unknown task")

    # render_report: SSE replies, durable creation, progress in statusMessage.
    st, h, msg = call_tool(url, "render_report", {"pages": 5})
    check(h["content-type"].startswith("text/event-stream"), "render_report tools/call replies as SSE")
    created = msg["result"]
    check(created["resultType"] == "task" and created["status"] == "working", "CreateTaskResult")
    for f in ["taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"]:
        check(f in created, f"CreateTaskResult has {f}")
    tid = created["taskId"]
    st, h, msg = modern(url, "tasks/get", {"taskId": tid}, name=tid)
    check(st == 200 and msg["result"]["taskId"] == tid, "durable creation: immediate tasks/get resolves")
    check(h["content-type"].startswith("text/event-stream"), "render_report tasks/get replies as SSE")
    check(msg["result"]["resultType"] == "complete", "tasks/get resultType complete")
    done = wait_status(url, tid, {"completed"})
    check(done["result"]["structuredContent"]["pages"] == 5, "report result")
    check("error" not in done and "inputRequests" not in done, "completed task carries only result")

    # flaky_job -> failed + error; lint -> completed + isError.
    tid = result_of(call_tool(url, "flaky_job"), "flaky_job")["taskId"]
    failed = wait_status(url, tid, {"completed", "failed", "cancelled"})
    check(failed["status"] == "failed" and failed["error"]["code"] == -32603, "flaky_job fails with a JSON-RPC error")
    tid = result_of(call_tool(url, "lint", {"repo": "acme/api"}), "lint")["taskId"]
    linted = wait_status(url, tid, {"completed", "failed", "cancelled"})
    check(linted["status"] == "completed" and linted["result"]["isError"] is True, "lint: completed with isError")

    # import_rows: cancel.
    tid = result_of(call_tool(url, "import_rows", {"count": 1000}), "import_rows")["taskId"]
    ack = result_of(modern(url, "tasks/cancel", {"taskId": tid}, name=tid), "tasks/cancel")
    check(ack == {"resultType": "complete"}, f"cancel ack is empty: {ack}")
    cancelled = wait_status(url, tid, {"completed", "failed", "cancelled"})
    check(cancelled["status"] == "cancelled", "import_rows ends cancelled")
    ack = result_of(modern(url, "tasks/cancel", {"taskId": tid}, name=tid), "cancel of a terminal task")
    check(ack == {"resultType": "complete"}, "cancel of a terminal task is acked")
    check(get_task(url, tid)["status"] == "cancelled", "terminal state does not change")

    # deploy: approval form, accept.
    tid = result_of(call_tool(url, "deploy", {"service": "api", "env": "staging"}), "deploy")["taskId"]
    waiting = wait_status(url, tid, {"input_required"})
    (key, req), = waiting["inputRequests"].items()
    props = req["params"]["requestedSchema"]["properties"]
    check(req["method"] == "elicitation/create", "input request is an elicitation")
    check(props["approve"]["type"] == "boolean" and props["environment"]["enum"] == ["staging", "production"]
          and props["note"]["type"] == "string", "approval form fields")
    ack = result_of(modern(url, "tasks/update", {"taskId": tid, "inputResponses": {
        key: {"action": "accept", "content": {"approve": True, "environment": "staging", "note": "ship it"}},
        "never-issued": {"action": "accept", "content": {}}}}, name=tid), "tasks/update")
    check(ack == {"resultType": "complete"}, "update ack is empty")
    done = wait_status(url, tid, {"completed", "failed", "cancelled"})
    text = done["result"]["content"][0]["text"]
    check(done["status"] == "completed" and "staging" in text and "ship it" in text, f"deploy result names the answers: {text}")
    # deploy: decline -> cancelled.
    tid = result_of(call_tool(url, "deploy", {"service": "db", "env": "production"}), "deploy 2")["taskId"]
    key = next(iter(wait_status(url, tid, {"input_required"})["inputRequests"]))
    result_of(modern(url, "tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "decline"}}}, name=tid), "decline")
    check(wait_status(url, tid, {"completed", "failed", "cancelled"})["status"] == "cancelled", "declined deploy ends cancelled")

    # survey: every field kind, answers echoed.
    tid = result_of(call_tool(url, "survey"), "survey")["taskId"]
    waiting = wait_status(url, tid, {"input_required"})
    (key, req), = waiting["inputRequests"].items()
    props = req["params"]["requestedSchema"]["properties"]
    formats = {p.get("format") for p in props.values()}
    check({"email", "uri", "date"} <= formats, "survey string formats")
    check(any("oneOf" in p for p in props.values()) and any("enumNames" in p for p in props.values()), "survey titled enums")
    check(any(p.get("items", {}).get("anyOf") for p in props.values())
          and any(p.get("items", {}).get("enum") for p in props.values()), "survey multi-selects")
    check({"integer", "number", "boolean", "array"} <= {p["type"] for p in props.values()}, "survey types")
    answers = {"name": "Ada", "email": "ada@example.com", "team_size": 4, "editor": "helix", "languages": ["rust", "go"]}
    result_of(modern(url, "tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "accept", "content": answers}}}, name=tid), "survey answer")
    done = wait_status(url, tid, {"completed", "failed", "cancelled"})
    check(done["result"]["structuredContent"]["answers"] == answers, "survey echoes the answers")

    # listen: ack, then one notifications/tasks per change; nothing for earlier state.
    expect_error(modern(url, "subscriptions/listen", {"notifications": {"taskIds": []}}, tasks=False), 400, -32021, "listen without the extension")
    tid = result_of(call_tool(url, "wait_for_input", {"prompt": "Say something"}), "wait_for_input")["taskId"]
    key = next(iter(wait_status(url, tid, {"input_required"})["inputRequests"]))
    lid = 4242
    body = {"jsonrpc": "2.0", "id": lid, "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {"taskIds": [tid, "not-a-task"]}}}
    stream = Stream(url, "POST", {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                                  "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}, body)
    try:
        check(stream.status == 200 and stream.headers["content-type"].startswith("text/event-stream"), "listen: SSE")
        ack = stream.next()
        check(ack["method"] == "notifications/subscriptions/acknowledged", f"first message is the ack: {ack}")
        check(ack["params"]["_meta"][SUB] == lid and isinstance(ack["params"]["_meta"][SUB], int), "ack subscriptionId = listen id, same type")
        check(ack["params"]["notifications"]["taskIds"] == [tid], "ack lists only known ids")
        value = "héllo wörld 42"
        result_of(modern(url, "tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "accept", "content": {"value": value}}}}, name=tid), "answer")
        seen = []
        while True:
            n = stream.next()
            check(n["method"] == "notifications/tasks", f"only task notifications: {n}")
            p = n["params"]
            check(p["_meta"][SUB] == lid and p["taskId"] == tid and "resultType" not in p, "notification shape")
            check("ttlMs" in p and "pollIntervalMs" in p and "createdAt" in p, "notification is a full DetailedTask")
            seen.append(p["status"])
            if p["status"] in ("completed", "failed", "cancelled"):
                break
        check(seen[0] != "input_required", f"no push for state before the listen: {seen}")
        check(seen[-1] == "completed" and value in p["result"]["content"][0]["text"], "pushed result carries the answer verbatim")
    finally:
        stream.close()
    # A repeat answer for an answered key is ignored.
    result_of(modern(url, "tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "decline"}}}, name=tid), "late update")
    check(get_task(url, tid)["status"] == "completed", "late update changes nothing")

    st, _, text = exchange(url, "GET", path="/stats")
    stats = json.loads(text)
    check(stats["methods"]["tasks/get"] > 5 and tid in stats["tasksGet"], "stats count tasks/get")
    check(stats["listensOpened"] >= 1 and stats["notificationsSent"] >= 2 and stats["tasksCreated"] >= 8, f"stats: {stats}")


# ---------------------------------------------------------------- legacy checks


class Legacy:
    def __init__(self, url):
        self.url = url
        rid = next_id()
        st, h, text = exchange(url, "POST", {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "check_demo", "version": "1"}}},
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        check(st == 200 and "mcp-session-id" in h, f"initialize: 200 + Mcp-Session-Id ({st} {text})")
        self.sid = h["mcp-session-id"]
        self.init = decode_reply(st, h, text, rid)["result"]
        st, _, _ = exchange(url, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers())
        check(st == 202, f"notifications/initialized: 202, got {st}")

    def headers(self, accept="application/json, text/event-stream"):
        return {"Content-Type": "application/json", "Accept": accept, "MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": self.sid}

    def req(self, method, params=None, headers=None):
        rid = next_id()
        h = headers if headers is not None else self.headers()
        st, rh, text = exchange(self.url, "POST", {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}, h)
        return st, rh, decode_reply(st, rh, text, rid)

    def result(self, method, params=None):
        return result_of(self.req(method, params), method)

    def get(self, _url, tid):
        return self.result("tasks/get", {"taskId": tid})

    def stream(self, method, params):
        body = {"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params}
        return body["id"], Stream(self.url, "POST", self.headers(), body)

    def respond(self, rid, result):
        st, _, _ = exchange(self.url, "POST", {"jsonrpc": "2.0", "id": rid, "result": result}, self.headers())
        check(st == 202, f"POSTed response: 202, got {st}")


def check_legacy(url):
    s = Legacy(url)
    check(s.init["protocolVersion"] == LEGACY, "initialize protocolVersion")
    check(s.init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}, "capabilities.tasks")
    st, _, _ = exchange(url, "POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    check(st == 400, f"legacy request without session: 400, got {st}")
    st, _, _ = s.req("tools/list", headers=dict(s.headers(), **{"Mcp-Session-Id": "nope"}))
    check(st == 404, f"unknown session: 404, got {st}")

    tools = {t["name"]: t for t in s.result("tools/list")["tools"]}
    check(tools["import_rows"]["execution"]["taskSupport"] == "required", "import_rows taskSupport required")
    check(tools["render_report"]["execution"]["taskSupport"] == "optional", "render_report taskSupport optional")
    expect_error(s.req("tools/call", {"name": "import_rows", "arguments": {}}), 200, -32601, "required tool without task")

    # Nested task, flat tasks/get, blocking tasks/result, isError -> failed.
    r = s.result("tools/call", {"name": "lint", "arguments": {"repo": "acme/x"}, "task": {"ttl": 60000}})
    t = r["task"]
    check("resultType" not in r and t["status"] == "working" and t["ttl"] == 60000 and "pollInterval" in t, f"nested CreateTaskResult: {r}")
    flat = s.result("tasks/get", {"taskId": t["taskId"]})
    check("ttl" in flat and "ttlMs" not in flat and "result" not in flat, "tasks/get returns a flat v1 Task")
    final = s.result("tasks/result", {"taskId": t["taskId"]})
    check(final["isError"] is True and final["_meta"][RELATED]["taskId"] == t["taskId"], "tasks/result returns the tool result")
    check(s.result("tasks/get", {"taskId": t["taskId"]})["status"] == "failed", "v1: isError -> failed")
    tid = s.result("tools/call", {"name": "flaky_job", "task": {}})["task"]["taskId"]
    expect_error(s.req("tasks/result", {"taskId": tid}), 200, -32603, "tasks/result returns the JSON-RPC error")

    # Elicitation on the tasks/result stream (no GET stream open).
    tid = s.result("tools/call", {"name": "wait_for_input", "arguments": {"prompt": "Name?"}, "task": {"ttl": 60000}})["task"]["taskId"]
    rid, stream = s.stream("tasks/result", {"taskId": tid})
    try:
        check(stream.headers["content-type"].startswith("text/event-stream"), "pending tasks/result streams")
        ask = stream.next(lambda m: m.get("method") == "elicitation/create")
        check("id" in ask and ask["params"]["_meta"][RELATED]["taskId"] == tid, "elicitation carries related-task")
        check("value" in ask["params"]["requestedSchema"]["properties"], "elicitation form")
        s.respond(ask["id"], {"action": "accept", "content": {"value": "legacy-ok ✓"}})
        final = stream.next(lambda m: m.get("id") == rid)
        check("legacy-ok ✓" in final["result"]["content"][0]["text"], "tasks/result after the answer")
    finally:
        stream.close()

    # Elicitation and status notifications on the GET stream; decline ends cancelled.
    get = Stream(url, "GET", s.headers("text/event-stream"))
    try:
        check(get.status == 200 and get.headers["content-type"].startswith("text/event-stream"), "GET stream opens")
        tid = s.result("tools/call", {"name": "deploy", "arguments": {"service": "api", "env": "staging"}, "task": {}})["task"]["taskId"]
        ask = get.next(lambda m: m.get("method") == "elicitation/create")
        check(ask["params"]["_meta"][RELATED]["taskId"] == tid, "GET-stream elicitation for the task")
        s.respond(ask["id"], {"action": "decline"})
        note = get.next(lambda m: m.get("method") == "notifications/tasks/status" and m["params"]["status"] == "cancelled")
        check(note["params"]["taskId"] == tid and "ttl" in note["params"] and "ttlMs" not in note["params"], "flat status notification")
    finally:
        get.close()

    # Inline SSE call with progress notifications before the response.
    rid = next_id()
    st, h, text = exchange(url, "POST", {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "render_report", "arguments": {"pages": 3}, "_meta": {"progressToken": "p-1"}}}, s.headers())
    msgs = parse_sse(text)
    check(h["content-type"].startswith("text/event-stream") and msgs[-1]["id"] == rid, "inline render_report is SSE")
    progress = [m for m in msgs if m.get("method") == "notifications/progress"]
    check(len(progress) == 3 and progress[0]["params"]["progressToken"] == "p-1", f"progress notifications: {progress}")

    # Cancel, list with pagination, TTL.
    tid = s.result("tools/call", {"name": "import_rows", "task": {}})["task"]["taskId"]
    c = s.result("tasks/cancel", {"taskId": tid})
    check(c["status"] == "cancelled" and c["taskId"] == tid, "v1 cancel returns the cancelled Task")
    expect_error(s.req("tasks/cancel", {"taskId": tid}), 200, -32602, "v1 cancel of a terminal task")
    for _ in range(6):
        s.result("tools/call", {"name": "render_report", "arguments": {"pages": 1}, "task": {}})
    page = s.result("tasks/list")
    check(len(page["tasks"]) == 10 and "nextCursor" in page, "tasks/list first page")
    rest = s.result("tasks/list", {"cursor": page["nextCursor"]})
    check(len(rest["tasks"]) >= 1 and "nextCursor" not in rest, "tasks/list second page")
    expect_error(s.req("tasks/list", {"cursor": "garbage"}), 200, -32602, "bad cursor")
    tid = s.result("tools/call", {"name": "lint", "arguments": {"repo": "r"}, "task": {"ttl": 200}})["task"]["taskId"]
    time.sleep(0.5)
    expect_error(s.req("tasks/get", {"taskId": tid}), 200, -32602, "expired task is purged")

    st, _, _ = exchange(url, "DELETE", headers=s.headers())
    check(st == 200, f"DELETE ends the session ({st})")
    st, _, _ = s.req("tools/list")
    check(st == 404, "session gone after DELETE")


def check_legacy_only(url):
    st, h, text = modern(url, "server/discover", raw=True)
    check(st == 400, f"legacy-only: server/discover 400, got {st}")
    body = json.loads(text) if text else {}
    check(body.get("error", {}).get("code") not in (-32020, -32021, -32022), "legacy-only: no modern error body")
    s = Legacy(url)
    check("tasks" in s.init["capabilities"], "legacy-only: initialize works")
    st, _, _ = exchange(url, "GET", headers={"Accept": "text/event-stream"})
    check(st == 400, f"legacy-only: GET without a session is 400 ({st})")
    # The server runs with --drop-streams-every 0.5: the GET stream must end by itself.
    get = Stream(url, "GET", s.headers("text/event-stream"))
    try:
        check(get.status == 200, "legacy-only: GET stream opens")
        try:
            get.next(timeout=5)
            raise Failure("a message arrived on an idle GET stream")
        except Failure as e:
            check("closed early" in str(e), f"--drop-streams-every closes the GET stream ({e})")
    finally:
        get.close()


def check_faults(url):
    expect_error(modern(url, "subscriptions/listen", {"notifications": {"taskIds": []}}), 404, -32601, "--no-push listen")
    tid = result_of(call_tool(url, "wait_for_input", {"prompt": "x"}), "wait_for_input")["taskId"]
    key = next(iter(wait_status(url, tid, {"input_required"})["inputRequests"]))
    result_of(modern(url, "tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "accept", "content": {"value": "v"}}}}, name=tid), "delayed update")
    early = get_task(url, tid)
    check(early["status"] in ("input_required", "working") and early["status"] != "completed"
          and (early["status"] != "input_required" or key in early["inputRequests"]),
          f"--ack-delay: update not applied yet ({early['status']})")
    wait_status(url, tid, {"completed"})
    statuses = [get_task(url, tid)["status"] for _ in range(8)]
    check(statuses[0] != "completed" and "completed" in statuses[1:], f"--stale-snapshots after terminal: {statuses}")


def check_chaos(url):
    st, _, _ = modern(url, "server/discover")
    check(st == 200, "chaos: discover is never a 503")
    st, h, _ = modern(url, "tools/list", raw=True)
    check(st == 503 and h.get("retry-after") == "1", f"chaos: 503 + Retry-After (got {st})")
    stats = json.loads(exchange(url, "GET", path="/stats")[2])
    check(stats["http503"] >= 1, "chaos: stats count the 503")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--legacy-url")
    ap.add_argument("--faults-url")
    ap.add_argument("--chaos-url")
    a = ap.parse_args()
    suites = [("modern", check_modern, a.url), ("legacy", check_legacy, a.url),
              ("legacy-only", check_legacy_only, a.legacy_url), ("faults", check_faults, a.faults_url),
              ("chaos", check_chaos, a.chaos_url)]
    failed = False
    for name, fn, url in suites:
        if not url:
            continue
        start = CHECKS
        try:
            fn(url)
            print(f"ok   {name}: {CHECKS - start} checks")
        except Failure as e:
            failed = True
            print(f"FAIL {name}: {e}")
        except Exception as e:  # a crash in the check is a failure too
            failed = True
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stdout)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
