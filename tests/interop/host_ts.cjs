#!/usr/bin/env node
// An agent host for taskrail's proxy tests, played by the official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `bash tests/interop/setup.sh` into
// $TASKRAIL_PEERS_DIR/node). It connects over stdio or Streamable HTTP, makes one
// tools/call and reports what happened as JSON lines on stdout (same events as
// host_python.py): connected, tools, progress, elicitation, task, status, result, error,
// cancelled.
//
//   node host_ts.cjs --stdio '["taskrail","proxy","URL"]' --call ask_name --elicit '{"name":"Ada"}'
//   node host_ts.cjs --url http://127.0.0.1:PORT/mcp --call slow_count --task
//
// --task runs the call as a 2025-11-25 task (params.task; the SDK then polls tasks/get and
// blocks on tasks/result). Without --elicit the client declares no elicitation.
// --cancel-after S aborts the call (the SDK sends notifications/cancelled). --sample TEXT
// declares sampling and answers every sampling request with TEXT. --surface exercises the
// rest of the protocol against server-everything first: ping, resources, prompts,
// completion, logging (a `log` event once a notifications/message arrives).
//
// --header 'Name: value' (repeatable) sends a header with every HTTP request (e.g. the
// listener's `Authorization: Bearer TOKEN`). --timeout-ms N is the request timeout the way
// most hosts set it: N ms, no resetTimeoutOnProgress, no onprogress (so no progressToken);
// when it fires the SDK sends notifications/cancelled with reason
// "McpError: MCP error -32001: Request timed out". --attempts N calls again after each
// error (an agent's retry), up to N calls, with one `attempt` event per call:
// {n, ok, code, message, text}. --relist, after the call: wait (within --timeout) for
// notifications/tools/list_changed (`list_changed`), list the tools again (`relisted`)
// and call again (`result_after`), as a host does once a server's tools change.
"use strict";

const path = require("path");
const { createRequire } = require("module");

const repo = path.resolve(__dirname, "..", "..");
const peers = process.env.TASKRAIL_PEERS_DIR || path.join(repo, ".peers");
const req = createRequire(path.join(peers, "node", "package.json"));
const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = req("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = req("@modelcontextprotocol/sdk/client/streamableHttp.js");
const {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} = req("@modelcontextprotocol/sdk/types.js");

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + "\n");
}

function parseArgs(argv) {
  const out = { args: "{}", name: "ts-host", timeout: 120, headers: {}, attempts: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === "--stdio") out.stdio = JSON.parse(next());
    else if (a === "--url") out.url = next();
    else if (a === "--call") out.call = next();
    else if (a === "--args") out.args = next();
    else if (a === "--name") out.name = next();
    else if (a === "--elicit") out.elicit = JSON.parse(next());
    else if (a === "--cancel-after") out.cancelAfter = Number(next());
    else if (a === "--timeout") out.timeout = Number(next());
    else if (a === "--task") out.task = true;
    else if (a === "--progress") out.progress = true;
    else if (a === "--list") out.list = true;
    else if (a === "--sample") out.sample = next();
    else if (a === "--surface") out.surface = true;
    else if (a === "--header") {
      const h = next();
      const colon = h.indexOf(":");
      if (colon <= 0) throw new Error(`--header wants 'Name: value', got ${h}`);
      out.headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
    } else if (a === "--timeout-ms") out.timeoutMs = Number(next());
    else if (a === "--attempts") out.attempts = Math.max(1, Number(next()));
    else if (a === "--relist") out.relist = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return out;
}

function textOf(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function surface(client, firstLog) {
  await client.ping();
  emit({ event: "pong" });
  const resources = await client.listResources();
  const uri = resources.resources[0].uri;
  const read = await client.readResource({ uri });
  emit({ event: "resource", count: resources.resources.length, uri, contents: read.contents.length });
  const prompts = await client.listPrompts();
  const prompt = await client.getPrompt({ name: "simple-prompt", arguments: {} });
  emit({ event: "prompts", names: prompts.prompts.map((p) => p.name), messages: prompt.messages.length });
  const done = await client.complete({
    ref: { type: "ref/prompt", name: "completable-prompt" },
    argument: { name: "department", value: "E" },
  });
  emit({ event: "completion", values: done.completion.values });
  await client.setLoggingLevel("debug");
  await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
  const log = await Promise.race([firstLog, new Promise((r) => setTimeout(() => r(null), 20000))]);
  emit({ event: "log", level: log ? log.level : null });
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const capabilities = a.elicit !== undefined ? { elicitation: { form: {} } } : {};
  if (a.sample !== undefined) capabilities.sampling = {};
  const client = new Client({ name: a.name, version: "1.0.0" }, { capabilities });
  if (a.sample !== undefined) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      emit({ event: "sampling" });
      return { model: "test-model", role: "assistant", content: { type: "text", text: a.sample } };
    });
  }
  let logged;
  const firstLog = new Promise((resolve) => (logged = resolve));
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logged(n.params));
  let changed;
  const toolsChanged = new Promise((resolve) => (changed = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed(true));
  if (a.elicit !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      emit({ event: "elicitation", message: request.params.message });
      emit({ event: "elicitation_answered" });
      return { action: "accept", content: a.elicit };
    });
  }
  const transport = a.stdio
    ? new StdioClientTransport({ command: a.stdio[0], args: a.stdio.slice(1), env: process.env, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(a.url), { requestInit: { headers: a.headers } });
  try {
    await client.connect(transport);
  } catch (e) {
    // The server refused the session (its initialize answered with an error).
    emit({ event: "error", code: e.code ?? null, message: String(e.message || e) });
    return;
  }
  emit({
    event: "connected",
    protocolVersion: transport.protocolVersion || null,
    server: client.getServerVersion()?.name,
    instructions: client.getInstructions() ?? null,
    listChanged: !!client.getServerCapabilities()?.tools?.listChanged,
  });
  if (a.list) {
    const tools = await client.listTools();
    emit({ event: "tools", names: tools.tools.map((t) => t.name) });
  }
  if (a.surface) await surface(client, firstLog);
  if (!a.call) {
    await client.close();
    return;
  }
  emit({ event: "calling", tool: a.call });
  const controller = new AbortController();
  let timer;
  if (a.cancelAfter !== undefined) {
    timer = setTimeout(() => controller.abort("cancelled by the test host"), a.cancelAfter * 1000);
  }
  const options = { signal: controller.signal };
  if (a.timeoutMs !== undefined) {
    // As most hosts do: a fixed timeout, no progress, nothing that extends it.
    options.timeout = a.timeoutMs;
  } else {
    options.timeout = a.timeout * 1000;
    options.resetTimeoutOnProgress = true;
    if (a.progress) {
      options.onprogress = (p) => emit({ event: "progress", progress: p.progress, message: p.message ?? null });
    }
  }
  for (let n = 1; n <= a.attempts; n++) {
    try {
      if (a.task) {
        const stream = client.experimental.tasks.callToolStream(
          { name: a.call, arguments: JSON.parse(a.args) },
          CallToolResultSchema,
          { ...options, task: { ttl: 600000 } },
        );
        let failed = null;
        for await (const message of stream) {
          if (message.type === "taskCreated") emit({ event: "task", status: message.task.status, taskId: message.task.taskId });
          else if (message.type === "taskStatus") emit({ event: "status", status: message.task.status });
          else if (message.type === "result")
            emit({ event: "result", isError: !!message.result.isError, text: textOf(message.result) });
          else if (message.type === "error") {
            if (controller.signal.aborted) emit({ event: "cancelled" });
            else {
              failed = message.error;
              emit({ event: "error", code: message.error.code, message: message.error.message });
            }
          }
        }
        if (a.attempts > 1)
          emit({ event: "attempt", n, ok: !failed, code: failed ? failed.code ?? null : null, message: failed ? String(failed.message) : null, text: null });
        if (!failed || controller.signal.aborted) break;
      } else {
        const result = await client.callTool({ name: a.call, arguments: JSON.parse(a.args) }, CallToolResultSchema, options);
        if (a.attempts > 1) emit({ event: "attempt", n, ok: true, code: null, message: null, text: textOf(result) });
        emit({ event: "result", isError: !!result.isError, text: textOf(result), structured: result.structuredContent ?? null });
        break;
      }
    } catch (e) {
      if (controller.signal.aborted) {
        emit({ event: "cancelled" });
        // Let the cancellation notification leave before the connection closes.
        await new Promise((r) => setTimeout(r, 1000));
        break;
      }
      const code = e.code ?? null;
      const message = String(e.message || e);
      if (a.attempts > 1) emit({ event: "attempt", n, ok: false, code, message, text: null });
      if (n === a.attempts) emit({ event: "error", code, message });
      else {
        // Let the cancellation notification of the timed-out call leave first.
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
  clearTimeout(timer);
  if (a.relist) await relist(client, a, toolsChanged);
  await client.close();
}

async function relist(client, a, toolsChanged) {
  emit({ event: "waiting_for_list_change" });
  const heard = await Promise.race([toolsChanged, new Promise((r) => setTimeout(() => r(false), a.timeout * 1000))]);
  if (!heard) {
    emit({ event: "error", code: null, message: "no notifications/tools/list_changed" });
    return;
  }
  emit({ event: "list_changed" });
  const tools = await client.listTools();
  emit({ event: "relisted", names: tools.tools.map((t) => t.name) });
  const result = await client.callTool({ name: a.call, arguments: JSON.parse(a.args) }, CallToolResultSchema, {
    timeout: a.timeout * 1000,
  });
  emit({ event: "result_after", isError: !!result.isError, text: textOf(result) });
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`host_ts: ${e && e.stack ? e.stack : e}\n`);
    process.exit(1);
  },
);
