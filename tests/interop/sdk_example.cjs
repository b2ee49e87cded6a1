#!/usr/bin/env node
// Starts one of the @modelcontextprotocol/sdk example servers (Streamable HTTP, legacy
// 2025-11-25) on 127.0.0.1 and prints exactly one line to stdout:
//
//     READY http://127.0.0.1:PORT/mcp [TOKEN]
//
// Usage: node sdk_example.cjs NAME
//   simpleTaskInteractive    task elicitation (confirm_delete) and task sampling (write_haiku); PORT
//   elicitationFormExample   foreground form elicitation (register_user, …); PORT
//   elicitationUrlExample    URL-mode elicitation (GET stream, -32042 tools) behind OAuth;
//                            MCP_PORT and MCP_AUTH_PORT. The launcher signs in to the
//                            example's own in-memory authorization server (dynamic client
//                            registration, PKCE; its authorize endpoint approves at once) and
//                            prints the access token after the URL.
//
// Every listen() is forced onto 127.0.0.1 by loopback.cjs. The example's own output goes to
// stderr. The node_modules folder comes from `bash tests/interop/setup.sh`:
// $TASKRAIL_PEERS_DIR/node (default <repo>/.peers/node).
"use strict";

const { spawn } = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const net = require("net");
const path = require("path");

const READY_TIMEOUT_MS = 30000;
const EXAMPLES = {
  simpleTaskInteractive: { ports: ["PORT"] },
  elicitationFormExample: { ports: ["PORT"] },
  elicitationUrlExample: { ports: ["MCP_PORT", "MCP_AUTH_PORT"], oauth: true },
};

function fail(message) {
  process.stderr.write(`sdk_example.cjs: ${message}\n`);
  process.exit(1);
}

const name = process.argv[2];
const example = EXAMPLES[name];
if (!example) fail(`unknown example ${JSON.stringify(name)}; one of ${Object.keys(EXAMPLES).join(", ")}`);

const repo = path.resolve(__dirname, "..", "..");
const peersDir = process.env.TASKRAIL_PEERS_DIR || path.join(repo, ".peers");
const entry = path.join(peersDir, "node", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", `${name}.js`);
if (!fs.existsSync(entry)) {
  fail(`${entry} is missing: run \`bash tests/interop/setup.sh\` (or \`bash tests/run_all.sh\`) first`);
}

// The URLs these examples hand out embed their ports, so the ports are chosen here.
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function probe(port, attemptsLeft) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve();
    });
    socket.once("error", (err) => {
      socket.destroy();
      if (attemptsLeft <= 0) return reject(new Error(`port ${port} does not accept connections: ${err.message}`));
      setTimeout(() => probe(port, attemptsLeft - 1).then(resolve, reject), 50);
    });
  });
}

const base64url = (buf) => buf.toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

// OAuth 2.1 authorization code + PKCE against the example's demo authorization server.
async function signIn(authPort, mcpPort) {
  const auth = `http://127.0.0.1:${authPort}`;
  const redirect = "http://127.0.0.1:9/callback";
  const resource = `http://localhost:${mcpPort}/mcp`;
  const reg = await fetch(`${auth}/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "taskrail interop test",
      redirect_uris: [redirect],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }),
  });
  if (!reg.ok) throw new Error(`client registration: HTTP ${reg.status} ${await reg.text()}`);
  const client = await reg.json();
  const verifier = base64url(crypto.randomBytes(32));
  const challenge = base64url(crypto.createHash("sha256").update(verifier).digest());
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: redirect,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "taskrail",
    scope: "mcp:tools",
    resource,
  });
  const authz = await fetch(`${auth}/authorize?${query}`, { redirect: "manual" });
  const location = authz.headers.get("location");
  if (!location) throw new Error(`authorize: HTTP ${authz.status} without a redirect`);
  const code = new URL(location).searchParams.get("code");
  if (!code) throw new Error(`authorize: no code in ${location}`);
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code,
    redirect_uri: redirect,
    client_id: client.client_id,
    code_verifier: verifier,
    resource,
  });
  if (client.client_secret) form.set("client_secret", client.client_secret);
  const tok = await fetch(`${auth}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
  });
  if (!tok.ok) throw new Error(`token: HTTP ${tok.status} ${await tok.text()}`);
  return (await tok.json()).access_token;
}

async function main() {
  const env = { ...process.env };
  const ports = {};
  for (const key of example.ports) {
    ports[key] = await freePort();
    env[key] = String(ports[key]);
  }
  const child = spawn(process.execPath, ["--require", path.join(__dirname, "loopback.cjs"), entry], {
    cwd: path.dirname(entry),
    env,
    // The example logs to stdout; keep our stdout for the READY line only.
    stdio: ["ignore", 2, 2, "ipc"],
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => process.exit(code === null ? (signal ? 1 : 0) : code));
  child.on("error", (err) => fail(`cannot start ${name}: ${err.message}`));
  child.on("message", () => {});
  const timer = setTimeout(() => {
    child.kill("SIGKILL");
    fail(`${name} did not listen within ${READY_TIMEOUT_MS} ms`);
  }, READY_TIMEOUT_MS);
  // If our parent (the test) dies without killing us, stop the server too.
  const parentPid = process.ppid;
  setInterval(() => {
    if (process.ppid !== parentPid) {
      child.kill("SIGKILL");
      process.exit(1);
    }
  }, 1000).unref();

  const mcpPort = ports.PORT || ports.MCP_PORT;
  try {
    for (const port of Object.values(ports)) await probe(port, 400);
    let line = `READY http://127.0.0.1:${mcpPort}/mcp`;
    if (example.oauth) line += ` ${await signIn(ports.MCP_AUTH_PORT, mcpPort)}`;
    clearTimeout(timer);
    process.stdout.write(`${line}\n`);
  } catch (err) {
    child.kill("SIGKILL");
    fail(err.message);
  }
}

main();
