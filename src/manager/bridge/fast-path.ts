/**
 * The bridge's fast path: a caller's bridged `GET /api/v1/edge/{projectId}/{deviceId}/...`
 * answered from the raw server's request event, without Fastify's request cycle (routing, the
 * request and reply objects, hooks, serialisation), which cost the manager, the bridge's
 * bottleneck, a large part of each bridged read (bench/fleet; docs/performance.md, issue 34).
 *
 * It takes only the calls whose outcome before the edge is known without a wait: `GET` without
 * a body or an upgrade, `X-AuthToken` whose principal is in the token cache and holds a role, a
 * device whose bridge target is in memory, in that project and readable by that principal, plain
 * ids (what the route's params schema and Fastify's router take unchanged), the request line
 * log (debug) off, and no module vetoing the path (`BridgeService.vetoFastPath`: the audit
 * trail's API activity log while it is on). Everything else (a first call, a refusal, a method that changes state and is
 * audited, HEAD, a WebSocket, a closing server) goes to Fastify unchanged: the route in
 * routes.ts, whose answers (and errors) are those of the contract.
 *
 * What Fastify would have done for such a call is done here the same way: the request id from
 * the app's generator, the actor and forwarded headers of routes.ts, the edge's status and
 * headers (less those the manager sets itself), a buffered body with its `Content-Length` (and
 * `application/octet-stream` when the edge named no type), a streamed one piped, a failure
 * before the answer in the one error shape (`AppError.toReply()`, a 500 for anything else).
 * Reads are not audited (audit/hook.ts: a caller's bridged read outside a recorded request
 * leaves no record), and the bridge's listeners still hear the call (`BridgeService.call`).
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { finished, type Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { forwardableHeaders } from '../../kernel/link/protocol.js';
import { roleAt, strongestRole, type ManagerAuthService } from '../auth/index.js';
import { principalActor, type BridgeService } from './service.js';

const PREFIX = '/api/v1/edge/';
/** An id the router and the params schema (1 to 100 characters) take as it is, undecoded. */
const PLAIN_ID = /^[A-Za-z0-9._~-]{1,100}$/;

type EdgeAnswer = Awaited<ReturnType<BridgeService['call']>>;

/** The bridge's drop lists (routes.ts), shared so that both paths forward the same. */
export interface BridgeDropLists {
  request: ReadonlySet<string>;
  response: ReadonlySet<string>;
}

/**
 * Puts the fast path in front of `app`'s own request handler on its server (its listener);
 * `inject` and any other server factory keep Fastify's path alone.
 */
export function installBridgeFastPath(
  app: FastifyInstance,
  deps: { bridge: BridgeService; auth: ManagerAuthService; log: Logger; drop: BridgeDropLists },
): void {
  const server = app.server as unknown as NodeJS.EventEmitter & { listening: boolean };
  const routing = app.routing as (req: IncomingMessage, res: ServerResponse) => void;
  if (!server.listeners('request').includes(routing)) return;
  const fast = new BridgeFastPath(app, deps);
  server.removeListener('request', routing);
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!server.listening || !fast.take(req, res)) routing(req, res);
  });
}

class BridgeFastPath {
  readonly #app: FastifyInstance;
  readonly #bridge: BridgeService;
  readonly #auth: ManagerAuthService;
  readonly #log: Logger;
  readonly #drop: BridgeDropLists;
  /** Fastify's request id generator (untyped on the instance): the ids stay one sequence. */
  readonly #genReqId: (req: IncomingMessage) => string;

  constructor(
    app: FastifyInstance,
    deps: { bridge: BridgeService; auth: ManagerAuthService; log: Logger; drop: BridgeDropLists },
  ) {
    this.#app = app;
    this.#bridge = deps.bridge;
    this.#auth = deps.auth;
    this.#log = deps.log;
    this.#drop = deps.drop;
    const gen = (app as unknown as { genReqId: (req: IncomingMessage) => string }).genReqId;
    this.#genReqId = (req) => gen(req);
  }

  /** Answers the call here and says true, or says false (nothing read or written) for Fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const h = req.headers;
    if (h.upgrade !== undefined || h['content-length'] !== undefined || h['transfer-encoding'] !== undefined)
      return false;
    const token = h['x-authtoken'];
    if (typeof token !== 'string') return false;
    const p = url.indexOf('/', PREFIX.length);
    const d = p < 0 ? -1 : url.indexOf('/', p + 1);
    if (d < 0) return false;
    const projectId = url.slice(PREFIX.length, p);
    const deviceId = url.slice(p + 1, d);
    if (!PLAIN_ID.test(projectId) || !PLAIN_ID.test(deviceId)) return false;
    // The request line at debug is Fastify's (server.ts): leave such requests to it.
    const level = this.#app.log.level;
    if (level === 'debug' || level === 'trace') return false;
    // A module that must see every request (the API activity log while it is on) vetoes the path.
    if (!this.#bridge.fastPathOpen()) return false;
    const principal = this.#auth.cachedPrincipal(token.trim());
    if (!principal || strongestRole(principal) === null) return false;
    const target = this.#bridge.fleet.cachedBridgeTarget(deviceId);
    if (!target || target.projectId !== projectId || roleAt(principal, target) === null) return false;

    const actor = principalActor(principal, target, this.#genReqId(req));
    const headers = forwardableHeaders(req.headers, this.#drop.request);
    this.#bridge
      .call(deviceId, { method: 'GET', path: url.slice(d), headers, body: null, actor }, target.credential)
      .then(
        (answer) => this.#answer(res, answer),
        (err: unknown) => this.#fail(res, err),
      );
    return true;
  }

  /** The edge's answer, as Fastify's `reply.status().header().send(body)` would have sent it. */
  #answer(res: ServerResponse, answer: EdgeAnswer): void {
    const { status, body } = answer;
    const headers: OutgoingHttpHeaders = {};
    for (const k in answer.headers) {
      const key = k.toLowerCase();
      if (!this.#drop.response.has(key)) headers[key] = answer.headers[k];
    }
    if (res.destroyed) {
      if (!Buffer.isBuffer(body)) body.destroy();
      return;
    }
    if ((status >= 100 && status < 200) || status === 204) {
      // No body, no content-type nor content-length (RFC 9110 §8.6; Fastify's rule too).
      delete headers['content-type'];
      delete headers['content-length'];
      if (!Buffer.isBuffer(body)) body.on('error', noop).resume();
      res.writeHead(status, headers);
      res.end();
      return;
    }
    if (Buffer.isBuffer(body)) {
      headers['content-type'] ??= 'application/octet-stream';
      if (Number(headers['content-length']) !== body.length) headers['content-length'] = String(body.length);
      res.writeHead(status, headers);
      res.end(body);
      return;
    }
    this.#stream(res, status, headers, body);
  }

  /** A streamed answer: piped; a failure before its head is an error answer, after it a cut. */
  #stream(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Readable): void {
    let open = true;
    finished(body, { readable: true, writable: false }, (err) => {
      open = false;
      if (!err) return;
      if (res.headersSent) res.destroy();
      else this.#fail(res, err);
    });
    finished(res, () => {
      if (open) body.destroy();
    });
    res.statusCode = status;
    for (const k in headers) res.setHeader(k, headers[k]!);
    body.pipe(res);
  }

  /** A failure before the answer, in the one error shape (error-handler.ts). */
  #fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    let appErr: AppError;
    if (err instanceof AppError) appErr = err;
    else {
      this.#log.error({ err }, 'unhandled error');
      appErr = new AppError(ERRORS.internal, 'internal server error');
    }
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    const payload = Buffer.from(JSON.stringify(appErr.toReply()));
    const headers: OutgoingHttpHeaders = {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(payload.length),
    };
    if (appErr.status === 429) headers['retry-after'] = '60';
    res.writeHead(appErr.status, headers);
    res.end(payload);
  }
}

function noop(): void {}
