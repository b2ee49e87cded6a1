#!/usr/bin/env node
// Starts the TypeScript SDK's OAuth example (simpleStreamableHttp.js --oauth: an MCP
// server with its own authorization server, both from @modelcontextprotocol/sdk) on
// 127.0.0.1 and prints exactly one line to stdout once both answer:
//
//     READY http://localhost:MCP_PORT/mcp
//
// The example names itself `localhost` in its metadata, so clients must use that host.
// Its two ports come from MCP_PORT / MCP_AUTH_PORT: this launcher picks two free ones
// (bind port 0, read it, release it) and forces every listen() onto 127.0.0.1 with
// loopback.cjs. Extra arguments (e.g. --oauth-strict) go to the example.
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const http = require("http");
const net = require("net");
const path = require("path");

const READY_TIMEOUT_MS = 30000;

function fail(message) {
  process.stderr.write(`sdk_oauth.cjs: ${message}\n`);
  process.exit(1);
}

const repo = path.resolve(__dirname, "..", "..");
const peersDir = process.env.TASKRAIL_PEERS_DIR || path.join(repo, ".peers");
const sdk = path.join(peersDir, "node", "node_modules", "@modelcontextprotocol", "sdk");
const entry = path.join(sdk, "dist", "esm", "examples", "server", "simpleStreamableHttp.js");
if (!fs.existsSync(entry)) {
  fail(`${entry} is missing: run \`bash tests/interop/setup.sh\` (or \`bash tests/run_all.sh\`) first`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function answers(port, urlPath) {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: urlPath, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
  });
}

async function main() {
  const mcpPort = await freePort();
  let authPort = await freePort();
  while (authPort === mcpPort) authPort = await freePort();
  const child = spawn(
    process.execPath,
    ["--require", path.join(__dirname, "loopback.cjs"), entry, "--oauth", ...process.argv.slice(2)],
    {
      cwd: path.dirname(entry),
      env: { ...process.env, MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
      stdio: ["ignore", 2, 2, "ipc"],
    },
  );
  child.on("exit", (code, signal) => fail(`the example exited (${code ?? signal})`));
  for (const sig of ["SIGTERM", "SIGINT"]) {
    process.on(sig, () => {
      child.kill("SIGKILL");
      process.exit(0);
    });
  }
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const mcp = await answers(mcpPort, "/.well-known/oauth-protected-resource/mcp");
    const as = await answers(authPort, "/.well-known/oauth-authorization-server");
    if (mcp && as) {
      process.stdout.write(`READY http://localhost:${mcpPort}/mcp\n`);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  fail(`no answer on ports ${mcpPort}/${authPort} within ${READY_TIMEOUT_MS} ms`);
}

main().catch((e) => fail(String(e)));
