/**
 * The template calls a manager makes on an edge, over the link through the bridge's path
 * (`callEdgeJson`/`callEdgeBytes`): upload a document into an upload session, apply or save it
 * (`PUT /config/template/{session}`), preview a saved one, read the current configuration.
 */
import { AppError } from '../../kernel/errors.js';
import { callEdgeBytes, callEdgeJson, type BridgeOptions } from '../bridge/routes.js';

/** The edge's answer as an error of the manager (its status for a 4xx; 502 for anything else). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): the edge's JSON error body, read leniently; to be typed with the bridge service
export function edgeError(what: string, r: { status: number; body: any }): AppError {
  const message =
    r.body && typeof r.body === 'object' && typeof r.body.message === 'string'
      ? r.body.message
      : typeof r.body === 'string'
        ? r.body.slice(0, 300)
        : `status ${r.status}`;
  const code =
    r.body && typeof r.body === 'object' && typeof r.body.code === 'string' ? r.body.code : 'edge_error';
  return new AppError(
    r.status >= 400 && r.status < 500 ? r.status : 502,
    code,
    `${what}: the edge answered ${r.status}: ${message}`,
    {
      details: { edgeStatus: r.status, edgeAnswer: r.body },
    },
  );
}

export class EdgeTemplates {
  constructor(readonly bridge: BridgeOptions) {}

  /** The document in a new upload session of the edge; answers the session id. */
  async upload(deviceId: string, text: string): Promise<string> {
    const s = await callEdgeJson(this.bridge, deviceId, 'POST', '/config/session', {});
    if (s.status !== 201) throw edgeError('opening an upload session', s);
    const id = String(s.body.id);
    const p = await callEdgeBytes(
      this.bridge,
      deviceId,
      'PATCH',
      `/config/session/${encodeURIComponent(id)}?offset=0`,
      {
        contentType: 'application/octet-stream',
        bytes: Buffer.from(text),
      },
    );
    if (p.status !== 200) throw edgeError('uploading the template', p);
    return id;
  }

  /**
   * `PUT /config/template/{session}`: applies (and saves when `name` is given). With
   * `idempotencyKey`, an edge that already applied under that key answers its recorded outcome
   * instead of applying again (`Idempotency-Key`; edges before it ignore the header).
   */
  put(deviceId: string, session: string, body: Record<string, unknown>, idempotencyKey?: string) {
    const clean = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
    return callEdgeJson(
      this.bridge,
      deviceId,
      'PUT',
      `/config/template/${encodeURIComponent(session)}`,
      clean,
      idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
    );
  }

  /** Ids of the edge's saved templates named `name`. */
  async findByName(deviceId: string, name: string): Promise<string[]> {
    const r = await callEdgeJson(
      this.bridge,
      deviceId,
      'GET',
      `/config/templates?limit=10&filter=${encodeURIComponent(`name:eq:${name}`)}`,
    );
    if (r.status !== 200) throw edgeError('listing the saved templates', r);
    return (r.body.items as { id: string }[]).map((t) => t.id);
  }

  async deleteSaved(deviceId: string, id: string): Promise<void> {
    const r = await callEdgeJson(
      this.bridge,
      deviceId,
      'DELETE',
      `/config/templates/${encodeURIComponent(id)}`,
    );
    if (r.status !== 204 && r.status !== 404) throw edgeError('removing a saved template', r);
  }

  /** Removes every saved template named `name` (best effort is the caller's choice). */
  async dropByName(deviceId: string, name: string): Promise<void> {
    for (const id of await this.findByName(deviceId, name)) await this.deleteSaved(deviceId, id);
  }

  /** What applying `text` would change: saved under a temporary name, previewed, removed. */
  async preview(deviceId: string, text: string, name: string, options: Record<string, unknown>) {
    const session = await this.upload(deviceId, text);
    const saved = await this.put(deviceId, session, { name, saveOnly: true });
    if (saved.status !== 200) throw edgeError('saving the template for a preview', saved);
    const id = String(saved.body.template.id);
    try {
      const clean = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
      const r = await callEdgeJson(
        this.bridge,
        deviceId,
        'POST',
        `/config/templates/${encodeURIComponent(id)}/preview`,
        clean,
      );
      if (r.status !== 200) throw edgeError('previewing the template', r);
      return r.body as unknown;
    } finally {
      await this.deleteSaved(deviceId, id).catch(() => undefined);
    }
  }

  /** The edge's current configuration as a document (secrets encrypted under `key`, or left out). */
  async current(deviceId: string, name: string, key: string | undefined): Promise<string> {
    const made = await callEdgeJson(this.bridge, deviceId, 'POST', '/config/templates', { name });
    if (made.status !== 201) throw edgeError('capturing the configuration', made);
    const id = String(made.body.id);
    try {
      const r = key
        ? await callEdgeJson(
            this.bridge,
            deviceId,
            'POST',
            `/config/templates/${encodeURIComponent(id)}/download`,
            {
              encryptionKey: key,
            },
          )
        : await callEdgeJson(
            this.bridge,
            deviceId,
            'GET',
            `/config/templates/${encodeURIComponent(id)}/download`,
          );
      if (r.status !== 200) throw edgeError('downloading the configuration', r);
      return typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
    } finally {
      await this.deleteSaved(deviceId, id).catch(() => undefined);
    }
  }
}
