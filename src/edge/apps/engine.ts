/**
 * A client of the Docker Engine API on a unix socket (Docker, or Podman's compatible service),
 * with node:http and nothing else. Paths are unversioned: the engine answers in its own current
 * API version. Every request has a deadline and a bound on the answer's size; the engine's own
 * refusals come back as `AppError`s carrying the engine's reason.
 */
import { request as httpRequest } from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, ERRORS } from '../../kernel/errors.js';

/** The most bytes of one answer read from the engine (a list of 1000 containers is ~2 MiB). */
export const MAX_ENGINE_REPLY_BYTES = 32 * 1024 * 1024;

/** Where an engine is looked for when no socket is configured, in order. */
export function defaultSockets(env: NodeJS.ProcessEnv = process.env): string[] {
  const out = ['/var/run/docker.sock'];
  if (env.XDG_RUNTIME_DIR) out.push(join(env.XDG_RUNTIME_DIR, 'podman', 'podman.sock'));
  out.push('/run/podman/podman.sock');
  return out;
}

export interface EngineRequest {
  method?: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface EngineReply {
  status: number;
  body: unknown;
}

export class EngineClient {
  readonly #configured: string | undefined;
  readonly #timeoutMs: number;

  constructor(options: { socket?: string | undefined; timeoutMs: number }) {
    this.#configured = options.socket || undefined;
    this.#timeoutMs = options.timeoutMs;
  }

  /** The socket in use: the configured one, else the first default that exists (else the first). */
  get socket(): string {
    if (this.#configured) return this.#configured;
    const candidates = defaultSockets();
    return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
  }

  /** A request whose 2xx answer is returned parsed; anything else throws (see `failure`). */
  async call<T = unknown>(req: EngineRequest, accept: number[] = []): Promise<T> {
    const reply = await this.raw(req);
    if ((reply.status >= 200 && reply.status < 300) || accept.includes(reply.status)) return reply.body as T;
    throw engineFailure(reply, `${req.method ?? 'GET'} ${req.path}`);
  }

  /** A request answered with whatever status the engine gave; only transport failures throw. */
  raw(req: EngineRequest): Promise<EngineReply> {
    const socket = this.socket;
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs;
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const path = qs.size > 0 ? `${req.path}?${qs}` : req.path;
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    return new Promise<EngineReply>((resolve, reject) => {
      const r = httpRequest(
        {
          socketPath: socket,
          path,
          method: req.method ?? 'GET',
          headers: {
            host: 'docker',
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
            ...req.headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_ENGINE_REPLY_BYTES) {
              res.destroy();
              reject(
                new AppError(
                  ERRORS.engineError,
                  `the container engine's answer to ${req.path} is larger than ${MAX_ENGINE_REPLY_BYTES} bytes`,
                ),
              );
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, body: parseBody(text) });
          });
          res.on('error', (err) => reject(unavailable(socket, err)));
        },
      );
      r.setTimeout(timeoutMs, () => {
        r.destroy(new Error(`no answer within ${timeoutMs} ms`));
      });
      r.on('error', (err) => reject(unavailable(socket, err)));
      if (payload) r.write(payload);
      r.end();
    });
  }
}

function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    // Streamed answers (a pull's progress) are JSON lines: keep them as a list.
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    try {
      return lines.map((l) => JSON.parse(l) as unknown);
    } catch {
      return text;
    }
  }
}

function unavailable(socket: string, err: Error): AppError {
  const code = (err as NodeJS.ErrnoException).code;
  const why = code ? `${code}: ${err.message}` : err.message;
  return new AppError(
    ERRORS.engineUnavailable,
    `no container engine answers on ${socket} (${why}); start Docker or \`podman system service\`, or set --apps-engine-socket`,
    { details: { socket } },
  );
}

/** The engine's message of an error answer (`{"message": ...}`), or its text. */
export function engineMessage(body: unknown): string {
  if (body && typeof body === 'object' && 'message' in body) return String(body.message);
  if (typeof body === 'string' && body.trim() !== '') return body.trim();
  return 'no reason given';
}

/**
 * An engine's error answer as the caller sees it: the engine's own reason as the message, with a
 * status of ours: its 400, 404 and 409 mean the same here; anything else (a 500 when a runtime
 * refuses to start a container) is the engine failing, a 502.
 */
export function engineFailure(reply: EngineReply, what: string): AppError {
  const reason = engineMessage(reply.body);
  const details = { engineStatus: reply.status, engineMessage: reason };
  if (reply.status === 404) return new AppError(ERRORS.notFound, reason, { details });
  if (reply.status === 409) return new AppError(ERRORS.conflict, reason, { details });
  if (reply.status === 400) return new AppError(ERRORS.badRequest, reason, { details });
  return new AppError(ERRORS.engineError, `the container engine refused ${what}: ${reason}`, { details });
}
