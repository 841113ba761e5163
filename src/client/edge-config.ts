/**
 * The edge's configuration API (`/config/...`) for scripts and the CLI: export the configuration
 * as a template, upload a template through a session in chunks and apply it, snapshots.
 */
import type { EdgeApi } from './api.js';
import { HttpError } from './errors.js';

export type ApplyMode = 'legacy' | 'use' | 'merge-apply';

export interface ConfigApplyOptions {
  mode?: ApplyMode;
  failFast?: boolean;
  encryptionKey?: string;
  parameters?: Record<string, Record<string, string | number | boolean>>;
  /** A non-empty name also saves the template. */
  name?: string;
  description?: string;
  saveOnly?: boolean;
  /** Bytes per PATCH (default 4 MiB). */
  chunkBytes?: number;
  /** Called after each uploaded chunk. */
  onUpload?: (sent: number, total: number) => void;
}

export interface SnapshotInfo {
  id: string;
  reason: string;
  sections: string[];
  size: number;
  createdAt: string;
}

export class EdgeConfigClient {
  constructor(private readonly edge: EdgeApi) {}

  /**
   * The current configuration as a template document: saved for a moment, downloaded (secrets
   * encrypted under `encryptionKey`, or left out without one) and deleted again.
   */
  async export(encryptionKey?: string): Promise<Record<string, unknown>> {
    const saved = await this.edge.rest<{ id: string }>('POST', '/config/templates', {
      name: `export ${new Date().toISOString()}`,
      description: 'made by an export; deleted at once',
    });
    try {
      return await this.edge.rest(
        'POST',
        `/config/templates/${saved.id}/download`,
        encryptionKey ? { encryptionKey } : {},
      );
    } finally {
      await this.edge.rest('DELETE', `/config/templates/${saved.id}`).catch(() => undefined);
    }
  }

  /**
   * Uploads `document` (text) through a session in chunks, then applies and/or saves it; answers
   * the route's body (`T`: its shape, as far as the caller reads it).
   */
  async apply<T = unknown>(document: string, options: ConfigApplyOptions = {}): Promise<T> {
    const { id } = await this.edge.rest<{ id: string }>('POST', '/config/session', {});
    const bytes = new TextEncoder().encode(document);
    const chunk = options.chunkBytes ?? 4 * 1024 * 1024;
    for (let at = 0; at < bytes.length; at += chunk) {
      const path = `/config/session/${id}?offset=${at}`;
      const res = await this.edge.request('PATCH', path, {
        headers: { 'content-type': 'application/octet-stream' },
        body: bytes.subarray(at, Math.min(at + chunk, bytes.length)),
      });
      if (res.status !== 200)
        throw new HttpError('PATCH', `${this.edge.url}${path}`, res.status, res.body, res.text);
      options.onUpload?.(Math.min(at + chunk, bytes.length), bytes.length);
    }
    const body: Record<string, unknown> = {};
    for (const k of [
      'mode',
      'failFast',
      'encryptionKey',
      'parameters',
      'name',
      'description',
      'saveOnly',
    ] as const) {
      if (options[k] !== undefined) body[k] = options[k];
    }
    return this.edge.rest<T>('PUT', `/config/template/${id}`, body);
  }

  async snapshots(): Promise<SnapshotInfo[]> {
    return (await this.edge.rest<{ items: SnapshotInfo[] }>('GET', '/config/snapshots')).items;
  }

  captureSnapshot(reason?: string): Promise<SnapshotInfo> {
    return this.edge.rest('POST', '/config/snapshots', reason ? { reason } : {});
  }

  /** One bounded prune call; repeat while `truncated`. */
  pruneSnapshots(ids?: string[]): Promise<{ deleted: string[]; remaining: number; truncated: boolean }> {
    return this.edge.rest('DELETE', '/config/snapshots', ids ? { ids } : {});
  }

  /** Rolls back to snapshot `id` (applied with no mode). */
  rollback<T = unknown>(id: string, encryptionKey?: string): Promise<T> {
    return this.edge.rest<T>('POST', `/config/templates/${id}/apply`, encryptionKey ? { encryptionKey } : {});
  }
}
