/**
 * The floor of `bench/fleet`'s bridge (issue 34): the least a proxy in Node does for a bridged
 * call, with no Millwright code around it. Two roles, each its own bare Node process (plain
 * JavaScript, no loader), started by bench/fleet.ts:
 *
 *   node bench/fleet-floor.mjs answerer <config.json>
 *   node bench/fleet-floor.mjs proxy <config.json> <answerer's link port>
 *
 * - `answerer` (the edge's stand-in): an HTTPS server answering every request with the edge's
 *   answer to `GET /devicehub/version` (status, headers less `date`/`connection`, body: taken
 *   from the real edge by the bench), checking the caller's `authorization` against the one
 *   expected; and a TLS server for the proxy's one persistent link socket, answering each request
 *   frame with that same answer in one frame.
 * - `proxy` (the manager's stand-in): an HTTPS server that, per request, checks `x-authtoken`
 *   (a Map lookup), checks the path's prefix, sends the method, path and the caller's headers
 *   (less hop-by-hop and the token) as one frame over the one TLS socket, and writes the frame
 *   that comes back as the HTTPS answer (status, headers less the proxy's own, `Content-Length`).
 *
 * Frames, both ways: u32 length of what follows, u32 call id, u32 length of a JSON head, the head
 * (request: `{m, p, h}`; answer: `{s, h}`), then the body bytes (answers only). Frames written in
 * one turn of the event loop leave in one write (cork, `setImmediate` uncork: what
 * src/kernel/link/batch.ts does for the link). TLS: Node's defaults, the bench's P-256
 * certificate, as the services. What it leaves out, being a floor: WebSocket framing, the link's
 * JSON envelope with a base64 body, request ids, deadlines, the audit hook, role rules beyond
 * one lookup; what it keeps is what any Node proxy must do: TLS and HTTP on the caller's side,
 * one frame each way on a TLS socket, the answer's headers and body.
 *
 * Each process prints one line `floor-ready {"port":N,"linkPort":N}` and runs until killed.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttps } from 'node:https';
import { connect, createServer as createTls } from 'node:tls';
import { setImmediate } from 'node:timers';

const [role, configFile, linkPortArg] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configFile, 'utf8'));
const tls = { key: config.key, cert: config.cert };

/** Frames out of a byte stream: calls `onFrame(id, head, body)` for each whole frame. */
function frameReader(onFrame) {
  let pending = null;
  return (chunk) => {
    let buf = pending ? Buffer.concat([pending, chunk]) : chunk;
    let at = 0;
    while (buf.length - at >= 4) {
      const len = buf.readUInt32BE(at);
      if (buf.length - at - 4 < len) break;
      const id = buf.readUInt32BE(at + 4);
      const headLen = buf.readUInt32BE(at + 8);
      const head = JSON.parse(buf.toString('utf8', at + 12, at + 12 + headLen));
      onFrame(id, head, buf.subarray(at + 12 + headLen, at + 4 + len));
      at += 4 + len;
    }
    pending = at < buf.length ? buf.subarray(at) : null;
    if (pending && at > 0) pending = Buffer.from(pending);
  };
}

/** One frame: length, id, head length, head JSON, body. */
function frame(id, head, body) {
  const h = Buffer.from(JSON.stringify(head));
  const out = Buffer.allocUnsafe(12 + h.length + (body ? body.length : 0));
  out.writeUInt32BE(out.length - 4, 0);
  out.writeUInt32BE(id, 4);
  out.writeUInt32BE(h.length, 8);
  h.copy(out, 12);
  if (body) body.copy(out, 12 + h.length);
  return out;
}

/** The first write of a turn corks the socket; the turn's writes leave together (batch.ts). */
function batchedWriter(socket) {
  let held = false;
  const release = () => {
    held = false;
    socket.uncork();
  };
  return (buf) => {
    if (!held) {
      held = true;
      socket.cork();
      setImmediate(release);
    }
    socket.write(buf);
  };
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'host',
  'te',
  'trailer',
]);

function ready(port, linkPort) {
  process.stdout.write(`floor-ready ${JSON.stringify({ port, linkPort })}\n`);
}

if (role === 'answerer') {
  const body = Buffer.from(config.answer.body, 'base64');
  const headers = config.answer.headers;
  const status = config.answer.status;
  const direct = createHttps(tls, (req, res) => {
    if (req.headers.authorization !== config.authorization) {
      res.writeHead(401).end();
      return;
    }
    res.writeHead(status, headers);
    res.end(body);
  });
  const link = createTls(tls, (socket) => {
    socket.setNoDelay(true);
    const send = batchedWriter(socket);
    socket.on(
      'data',
      frameReader((id, head) => {
        // The request's method and path would pick the handler; here there is one answer.
        if (head.m !== 'GET') send(frame(id, { s: 405, h: {} }, null));
        else send(frame(id, { s: status, h: headers }, body));
      }),
    );
  });
  direct.listen(0, '127.0.0.1', () =>
    link.listen(0, '127.0.0.1', () => ready(direct.address().port, link.address().port)),
  );
} else if (role === 'proxy') {
  const tokens = new Map([[config.token, { role: 'admin' }]]);
  const prefix = config.prefix;
  const waiting = new Map();
  let nextId = 1;
  const socket = connect({ host: '127.0.0.1', port: Number(linkPortArg), rejectUnauthorized: false });
  socket.setNoDelay(true);
  const send = batchedWriter(socket);
  socket.on(
    'data',
    frameReader((id, head, body) => {
      const res = waiting.get(id);
      if (!res) return;
      waiting.delete(id);
      const headers = {};
      for (const k in head.h)
        if (k !== 'date' && k !== 'connection' && k !== 'keep-alive') headers[k] = head.h[k];
      headers['content-length'] = String(body.length);
      res.writeHead(head.s, headers);
      res.end(body);
    }),
  );
  const server = createHttps(tls, (req, res) => {
    const token = req.headers['x-authtoken'];
    if (typeof token !== 'string' || !tokens.has(token) || !req.url.startsWith(prefix)) {
      res.writeHead(401).end();
      return;
    }
    const h = {};
    for (const k in req.headers) if (!HOP_BY_HOP.has(k) && k !== 'x-authtoken') h[k] = req.headers[k];
    const id = nextId++;
    waiting.set(id, res);
    send(frame(id, { m: req.method, p: req.url.slice(prefix.length), h }, null));
  });
  socket.once('secureConnect', () => server.listen(0, '127.0.0.1', () => ready(server.address().port, 0)));
} else {
  console.error('usage: node bench/fleet-floor.mjs answerer|proxy <config.json> [link port]');
  process.exit(2);
}
