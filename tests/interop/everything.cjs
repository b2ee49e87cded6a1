#!/usr/bin/env node
// Starts @modelcontextprotocol/server-everything (Streamable HTTP) on
// 127.0.0.1 with an ephemeral port and prints exactly one line to stdout:
//
//     READY http://127.0.0.1:PORT/mcp
//
// The server's own console output goes to stderr. The node_modules folder comes
// from `bash tests/interop/setup.sh`: $TASKRAIL_PEERS_DIR/node (default
// <repo>/.peers/node). Usage: node everything.cjs [--port N]
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const net = require("net");
const path = require("path");

const READY_TIMEOUT_MS = 30000;

function fail(message) {
  process.stderr.write(`everything.cjs: ${message}\n`);
  process.exit(1);
}

const repo = path.resolve(__dirname, "..", "..");
const peersDir = process.env.TASKRAIL_PEERS_DIR || path.join(repo, ".peers");
const entry = path.join(peersDir, "node", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
if (!fs.existsSync(entry)) {
  fail(`${entry} is missing: run \`bash tests/interop/setup.sh\` (or \`bash tests/run_all.sh\`) first`);
}

const portFlag = process.argv.indexOf("--port");
const port = portFlag >= 0 ? String(Number(process.argv[portFlag + 1]) || 0) : "0";

const child = spawn(process.execPath, ["--require", path.join(__dirname, "loopback.cjs"), entry, "streamableHttp"], {
  cwd: path.dirname(entry),
  env: { ...process.env, PORT: port },
  // The server logs to stdout; keep our stdout for the READY line only.
  stdio: ["ignore", 2, 2, "ipc"],
});

for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => {
    child.kill(signal);
  });
}
child.on("exit", (code, signal) => {
  process.exit(code === null ? (signal ? 1 : 0) : code);
});
child.on("error", (err) => fail(`cannot start server: ${err.message}`));

const timer = setTimeout(() => {
  child.kill("SIGKILL");
  fail(`server did not listen within ${READY_TIMEOUT_MS} ms`);
}, READY_TIMEOUT_MS);

function probe(listenPort, attemptsLeft) {
  const socket = net.connect({ host: "127.0.0.1", port: listenPort });
  socket.once("connect", () => {
    socket.destroy();
    clearTimeout(timer);
    process.stdout.write(`READY http://127.0.0.1:${listenPort}/mcp\n`);
  });
  socket.once("error", (err) => {
    socket.destroy();
    if (attemptsLeft <= 0) fail(`port ${listenPort} does not accept connections: ${err.message}`);
    setTimeout(() => probe(listenPort, attemptsLeft - 1), 50);
  });
}

// If our parent (the test) dies without killing us, stop the server too.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) {
    child.kill("SIGKILL");
    process.exit(1);
  }
}, 1000).unref();

child.once("message", (message) => {
  if (message && message.listening) probe(message.listening.port, 100);
});
