// Preload (`node --require loopback.cjs ...`) for third-party test servers.
//
// Forces every TCP listen() onto 127.0.0.1 so a test peer never binds a public
// interface. When the process was spawned with an IPC channel (everything.cjs
// does that), it also reports the real port of the first listening TCP server,
// which lets the launcher pass PORT=0 and get an ephemeral port without a race.
"use strict";

const net = require("net");

const LOOPBACK = "127.0.0.1";
const originalListen = net.Server.prototype.listen;
let reported = false;

// With an IPC channel to a launcher, die with it: a killed launcher must not
// leave an orphaned server behind.
if (typeof process.send === "function") {
  process.on("disconnect", () => process.exit(0));
}

function isPort(value) {
  return (
    typeof value === "number" ||
    (typeof value === "string" && /^\d+$/.test(value))
  );
}

net.Server.prototype.listen = function patchedListen(...args) {
  if (args.length > 0 && isPort(args[0])) {
    // listen(port[, host][, backlog][, callback]): drop any host, use loopback.
    const port = Number(args[0]);
    const rest = args.slice(1);
    if (rest.length > 0 && typeof rest[0] === "string") rest.shift();
    args = [port, LOOPBACK, ...rest];
  } else if (args.length > 0 && args[0] && typeof args[0] === "object" && !Array.isArray(args[0])) {
    const options = args[0];
    if (options.path === undefined && options.fd === undefined && options.handle === undefined && !options._handle) {
      args = [{ ...options, host: LOOPBACK, port: Number(options.port || 0) }, ...args.slice(1)];
    }
  } else if (args.length === 0 || typeof args[0] === "function") {
    args = [0, LOOPBACK, ...args];
  }
  this.once("listening", () => {
    const address = this.address();
    if (!reported && address && typeof address === "object" && typeof process.send === "function") {
      reported = true;
      process.send({ listening: { host: address.address, port: address.port } });
    }
  });
  return originalListen.apply(this, args);
};
