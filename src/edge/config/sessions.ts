/**
 * Upload sessions of the configuration API: a template's raw bytes received in chunks (PATCH),
 * then parsed once whole. At most `CONFIG_LIMITS.maxSessions` open (the oldest goes first), each
 * at most `maxTemplateBytes`, dropped after `sessionTtlMs` without writes.
 */
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { parseDocument, type TemplateDocument } from './document.js';
import { CONFIG_LIMITS } from './shapes.js';

interface Session {
  id: string;
  chunks: Buffer[];
  size: number;
  touched: number;
}

export class UploadSessions {
  readonly #sessions = new Map<string, Session>();

  #expire(): void {
    const now = Date.now();
    for (const [id, s] of this.#sessions)
      if (now - s.touched > CONFIG_LIMITS.sessionTtlMs) this.#sessions.delete(id);
  }

  open(): { id: string } {
    this.#expire();
    while (this.#sessions.size >= CONFIG_LIMITS.maxSessions) {
      const oldest = [...this.#sessions.values()].sort((a, b) => a.touched - b.touched)[0]!;
      this.#sessions.delete(oldest.id);
    }
    const id = uuidv7();
    this.#sessions.set(id, { id, chunks: [], size: 0, touched: Date.now() });
    return { id };
  }

  #session(id: string): Session {
    this.#expire();
    const s = this.#sessions.get(id);
    if (!s) throw notFound(`upload session "${id}" not found (sessions expire after an hour without writes)`);
    return s;
  }

  /** Appends a chunk; `offset`, when given, must be the bytes received so far. */
  append(id: string, chunk: Buffer, offset?: number): { id: string; size: number } {
    const s = this.#session(id);
    if (offset !== undefined && offset !== s.size)
      throw conflict(
        `upload session "${id}" has ${s.size} bytes; a chunk at offset ${offset} does not follow`,
      );
    if (s.size + chunk.length > CONFIG_LIMITS.maxTemplateBytes)
      throw new AppError(
        ERRORS.payloadTooLarge,
        `a template has at most ${CONFIG_LIMITS.maxTemplateBytes} bytes`,
      );
    s.chunks.push(chunk);
    s.size += chunk.length;
    s.touched = Date.now();
    return { id, size: s.size };
  }

  /** The uploaded document of a session (parsed; the session stays until `close`). */
  document(id: string): TemplateDocument {
    const s = this.#session(id);
    if (s.size === 0) throw badRequest(`upload session "${id}" is empty; PATCH the template into it first`);
    return parseDocument(Buffer.concat(s.chunks).toString('utf8'));
  }

  close(id: string): void {
    this.#sessions.delete(id);
  }
}
