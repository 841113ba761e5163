/**
 * The template calls a manager makes on an edge, over the link through the bridge's service:
 * upload a document into an upload session, apply it (`PUT /config/template/{session}` with an
 * `Idempotency-Key`), preview it, read the current configuration.
 */
import { AppError, ERRORS } from '../../kernel/errors.js';
import type { BridgeService, EdgeAnswer } from '../bridge/index.js';

/** The edge's answer as an error of the manager (its status for a 4xx; 502 for anything else). */
export function edgeError(what: string, r: EdgeAnswer): AppError {
  const message =
    r.body && typeof r.body === 'object' && typeof r.body.message === 'string'
      ? r.body.message
      : typeof r.body === 'string'
        ? r.body.slice(0, 300)
        : `status ${r.status}`;
  const code =
    r.body && typeof r.body === 'object' && typeof r.body.code === 'string' ? r.body.code : undefined;
  return AppError.relayed(
    r.status >= 400 && r.status < 500 ? r.status : 502,
    code,
    ERRORS.edgeError,
    `${what}: the edge answered ${r.status}: ${message}`,
    {
      details: { edgeStatus: r.status, edgeAnswer: r.body },
    },
  );
}

/** How a document is applied (the body of `PUT /config/template/{session}`, undefined left out). */
export interface EdgeApplyOptions {
  mode?: string | undefined;
  failFast?: boolean | undefined;
  encryptionKey?: string | undefined;
  parameters?: Record<string, unknown> | undefined;
}

const defined = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

export class EdgeTemplates {
  constructor(readonly bridge: BridgeService) {}

  /**
   * The document in a new upload session of the edge; answers the session id. One call: the
   * session is opened with the document as its first chunk. An edge that opens empty sessions
   * only (before 4.5) refuses that body with a 400 or 415: then it is opened, then written.
   */
  async upload(deviceId: string, text: string): Promise<string> {
    const bytes = Buffer.from(text);
    const one = await this.bridge.bytes(deviceId, 'POST', '/config/session', {
      contentType: 'application/octet-stream',
      bytes,
    });
    if (one.status === 201 && one.body?.size === bytes.length) return String(one.body.id);
    if (one.status !== 400 && one.status !== 415 && one.status !== 201)
      throw edgeError('uploading the template', one);
    const s = one.status === 201 ? one : await this.bridge.json(deviceId, 'POST', '/config/session', {});
    if (s.status !== 201) throw edgeError('opening an upload session', s);
    const id = String(s.body.id);
    const p = await this.bridge.bytes(
      deviceId,
      'PATCH',
      `/config/session/${encodeURIComponent(id)}?offset=0`,
      { contentType: 'application/octet-stream', bytes },
    );
    if (p.status !== 200) throw edgeError('uploading the template', p);
    return id;
  }

  /**
   * Applies `text` on the edge under `idempotencyKey`: the upload, then `PUT
   * /config/template/{session}` with `Idempotency-Key` (two round trips). An edge that already
   * applied under that key answers its recorded outcome (`result.replayed`) instead of applying
   * again; nothing is saved on the edge.
   */
  async apply(
    deviceId: string,
    text: string,
    options: EdgeApplyOptions,
    idempotencyKey: string,
    beforeApply?: () => Promise<void>,
  ): Promise<EdgeAnswer> {
    const session = await this.upload(deviceId, text);
    await beforeApply?.();
    return this.put(deviceId, session, defined(options), idempotencyKey);
  }

  /** `PUT /config/template/{session}`: applies (and saves when `name` is given). */
  put(deviceId: string, session: string, body: Record<string, unknown>, idempotencyKey?: string) {
    return this.bridge.json(
      deviceId,
      'PUT',
      `/config/template/${encodeURIComponent(session)}`,
      defined(body),
      idempotencyKey === undefined ? undefined : { 'idempotency-key': idempotencyKey },
    );
  }

  async deleteSaved(deviceId: string, id: string): Promise<void> {
    const r = await this.bridge.json(deviceId, 'DELETE', `/config/templates/${encodeURIComponent(id)}`);
    if (r.status !== 204 && r.status !== 404) throw edgeError('removing a saved template', r);
  }

  /** What applying `text` would change: saved under a temporary name, previewed, removed. */
  async preview(deviceId: string, text: string, name: string, options: Record<string, unknown>) {
    const session = await this.upload(deviceId, text);
    const saved = await this.put(deviceId, session, { name, saveOnly: true });
    if (saved.status !== 200) throw edgeError('saving the template for a preview', saved);
    const id = String(saved.body.template.id);
    try {
      const r = await this.bridge.json(
        deviceId,
        'POST',
        `/config/templates/${encodeURIComponent(id)}/preview`,
        defined(options),
      );
      if (r.status !== 200) throw edgeError('previewing the template', r);
      return r.body as unknown;
    } finally {
      await this.deleteSaved(deviceId, id).catch(() => undefined);
    }
  }

  /** The edge's current configuration as a document (secrets encrypted under `key`, or left out). */
  async current(deviceId: string, name: string, key: string | undefined): Promise<string> {
    const made = await this.bridge.json(deviceId, 'POST', '/config/templates', { name });
    if (made.status !== 201) throw edgeError('capturing the configuration', made);
    const id = String(made.body.id);
    try {
      const path = `/config/templates/${encodeURIComponent(id)}/download`;
      const r = key
        ? await this.bridge.json(deviceId, 'POST', path, { encryptionKey: key })
        : await this.bridge.json(deviceId, 'GET', path);
      if (r.status !== 200) throw edgeError('downloading the configuration', r);
      return typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
    } finally {
      await this.deleteSaved(deviceId, id).catch(() => undefined);
    }
  }
}
