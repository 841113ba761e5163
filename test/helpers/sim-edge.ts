/**
 * Simulated edges: link clients from src/kernel/link speaking the real protocol to a manager
 * (activation with a code, the WebSocket link, hello, heartbeats, reconnect), answering the
 * edge's configuration calls that a template apply makes (`/config/session`, `PUT
 * /config/template/{id}`, `/config/templates`) from memory, and counting every apply by the
 * name it is saved under, so that a test or a bench can tell how often each subtask reached the
 * edge. Used by the 20-edge two-manager test and by bench/fleet's 1,000-edge task.
 */
import WebSocket from 'ws';
import {
  parseBodyFrame,
  parseMessage,
  type HaRoleMessage,
  type LinkMessage,
} from '../../src/kernel/link/protocol.js';
import { http } from './edge.js';
import { ERRORS } from '../../src/kernel/errors.js';

export interface SimEdgeOptions {
  /** How long an apply takes on the edge. */
  applyMs?: number;
  version?: string;
}

export class SimEdge {
  deviceId = '';
  linkSecret = '';
  /** Applies received, by the name the template was saved under. */
  readonly applies = new Map<string, number>();
  /** Saved templates by id. */
  readonly saved = new Map<string, string>();
  /** Sends answered from a recorded Idempotency-Key instead of applied again. */
  replays = 0;
  readonly #keys = new Map<string, Record<string, unknown>>();
  connected = false;
  /** The high-availability messages (`ha`) the manager sent, in order. */
  readonly ha: HaRoleMessage[] = [];
  #ws: WebSocket | null = null;
  #stopped = false;
  #sessions = new Map<string, Buffer>();
  #next = 1;
  #linkUrl = '';
  #reconnecting = false;

  constructor(readonly options: SimEdgeOptions = {}) {}

  /** Enrols with an activation code at `managerUrl` (`POST /dm/activate`). */
  async activate(managerUrl: string, code: string): Promise<void> {
    const r = await http(`${managerUrl}/dm/activate`, {
      json: { code, edgeCredential: 'mwt_simulated', version: this.options.version ?? '4.4.0' },
    });
    if (r.status !== 200) throw new Error(`activate: ${r.status} ${r.text}`);
    this.deviceId = r.body.deviceId;
    this.linkSecret = r.body.linkSecret;
    this.#linkUrl = `${managerUrl.replace(/^http/, 'ws')}/dm/link`;
  }

  /** Links (resolves on the welcome) and keeps linking again after a loss until `stop`. */
  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.#linkUrl, {
        headers: { 'x-device-id': this.deviceId, 'x-device-secret': this.linkSecret },
        rejectUnauthorized: false,
        perMessageDeflate: false,
      });
      this.#ws = ws;
      const bodies = new Map<number, { m: Extract<LinkMessage, { t: 'req' }>; chunks: Buffer[] }>();
      let hb: NodeJS.Timeout | null = null;
      ws.on('open', () =>
        ws.send(
          JSON.stringify({
            t: 'hello',
            version: this.options.version ?? '4.4.0',
            millwright: 'sim',
            host: { hostname: 'sim' },
          }),
        ),
      );
      ws.on('message', (data: Buffer, binary: boolean) => {
        if (binary) {
          const f = parseBodyFrame(data);
          if (f) bodies.get(f.id)?.chunks.push(f.chunk);
          return;
        }
        const m = parseMessage(data.toString());
        if (!m) return;
        if (m.t === 'welcome') {
          this.connected = true;
          hb = setInterval(
            () => ws.send(JSON.stringify({ t: 'hb', metrics: { cpuPercent: 1 } })),
            m.heartbeatMs,
          );
          hb.unref();
          resolve();
        } else if (m.t === 'ha') {
          this.ha.push(m);
        } else if (m.t === 'req') {
          if (m.body) bodies.set(m.id, { m, chunks: [] });
          else void this.#answer(ws, m, Buffer.alloc(0));
        } else if (m.t === 'end') {
          const b = bodies.get(m.id);
          if (b) {
            bodies.delete(m.id);
            void this.#answer(ws, b.m, Buffer.concat(b.chunks));
          }
        }
      });
      ws.on('error', (err) => {
        if (!this.connected) reject(err);
      });
      ws.on('close', () => {
        reject(new Error('the link closed before the welcome'));
        this.connected = false;
        if (hb) clearInterval(hb);
        if (!this.#stopped) this.#reconnect();
      });
    });
  }

  /** One reconnect loop at a time: every 200 ms until linked again (or stopped). */
  #reconnect(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    const again = () => {
      if (this.#stopped) return;
      this.connect().then(
        () => (this.#reconnecting = false),
        () => setTimeout(again, 200).unref(),
      );
    };
    setTimeout(again, 200).unref();
  }

  async #answer(ws: WebSocket, m: Extract<LinkMessage, { t: 'req' }>, body: Buffer): Promise<void> {
    const key = m.headers?.['idempotency-key'];
    const { status, json } = await this.#handle(
      m.method,
      m.path,
      body,
      typeof key === 'string' ? key : undefined,
    );
    if (ws.readyState !== ws.OPEN) return;
    const text = json === undefined ? '' : JSON.stringify(json);
    ws.send(
      JSON.stringify({
        t: 'res',
        id: m.id,
        status,
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(text).toString('base64'),
      }),
    );
  }

  async #handle(
    method: string,
    path: string,
    body: Buffer,
    idempotencyKey?: string,
  ): Promise<{ status: number; json?: unknown }> {
    const url = new URL(path, 'http://sim');
    const p = url.pathname;
    if (method === 'POST' && p === '/config/session') {
      // As the edge: a raw body is the session's first chunk (the manager's two-round-trip apply).
      const id = `s${this.#next++}`;
      const first = body.length > 0 && body.toString() !== '{}' ? body : Buffer.alloc(0);
      this.#sessions.set(id, first);
      return { status: 201, json: { id, maxBytes: 1 << 27, size: first.length } };
    }
    let g = /^\/config\/session\/([^/]+)$/.exec(p);
    if (method === 'PATCH' && g) {
      const s = this.#sessions.get(g[1]!);
      if (!s) return { status: 404, json: { code: ERRORS.notFound.code, message: 'no session' } };
      this.#sessions.set(g[1]!, Buffer.concat([s, body]));
      return { status: 200, json: { id: g[1], size: s.length + body.length } };
    }
    g = /^\/config\/template\/([^/]+)$/.exec(p);
    if (method === 'PUT' && g) {
      const doc = this.#sessions.get(g[1]!);
      if (!doc) return { status: 404, json: { code: ERRORS.notFound.code, message: 'no session' } };
      const req = JSON.parse(body.toString() || '{}') as { name?: string };
      const name = req.name ?? '';
      // As the edge: an apply already made with this Idempotency-Key answers its recorded outcome.
      const prior = idempotencyKey === undefined ? undefined : this.#keys.get(idempotencyKey);
      if (prior) {
        this.replays++;
        this.#sessions.delete(g[1]!);
        return { status: 200, json: { result: { ...prior, replayed: true } } };
      }
      // The edge saves (named) before it applies.
      const id = `t${this.#next++}`;
      if (name) this.saved.set(id, name);
      await new Promise((r) => setTimeout(r, this.options.applyMs ?? 0));
      this.applies.set(name, (this.applies.get(name) ?? 0) + 1);
      if (idempotencyKey !== undefined)
        this.#keys.set(idempotencyKey, { snapshotId: `snap-${id}`, applied: true, failed: [] });
      this.#sessions.delete(g[1]!);
      return {
        status: 200,
        json: {
          template: { id, name },
          result: { snapshotId: `snap-${id}`, applied: ['devicehub'], failed: [] },
        },
      };
    }
    if (method === 'GET' && p === '/config/templates') {
      const f = /^name:eq:(.*)$/.exec(url.searchParams.get('filter') ?? '');
      const items = [...this.saved].filter(([, n]) => !f || n === f[1]).map(([id, name]) => ({ id, name }));
      return { status: 200, json: { items, total: items.length, offset: 0, limit: 10 } };
    }
    g = /^\/config\/templates\/([^/]+)$/.exec(p);
    if (method === 'DELETE' && g) {
      return this.saved.delete(g[1]!)
        ? { status: 204 }
        : { status: 404, json: { code: ERRORS.notFound.code, message: 'no template' } };
    }
    return { status: 404, json: { code: ERRORS.notFound.code, message: `${method} ${p}` } };
  }

  /** Asks for the high-availability role (`lease`) with `seq`. */
  lease(seq: number): void {
    this.#ws?.send(JSON.stringify({ t: 'lease', seq }));
  }

  stop(): void {
    this.#stopped = true;
    this.#ws?.terminate();
  }
}
