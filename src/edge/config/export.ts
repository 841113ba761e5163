/**
 * The current configuration written out: the document's JSON text (`exportText`) or its UTF-8
 * bytes in pieces, with each section's byte range (`exportBytes`, what a save and a snapshot
 * store), each section written as text where it can (`exportJson`, `exportJsonBytes`: no objects
 * for the DeviceHub's 100,000 tags). And `RecentExport`: the pieces of the configuration just saved as a
 * template, kept for the download that follows (`EdgeConfigClient.export` saves, downloads and
 * deletes), so that it needs neither the store's gunzip nor a scan of the bytes for its sections.
 */
import type { ConfigSection } from '../../kernel/service/index.js';
import { TEMPLATE_FORMAT, TEMPLATE_VERSION, escapePlaceholders } from './document.js';

/** A section's export as JSON text, `{{` escaped (undefined: the section exports nothing). */
async function sectionText(s: ConfigSection): Promise<string | undefined> {
  return s.exportJson
    ? s.exportJson()
    : (JSON.stringify(escapePlaceholders(await s.export())) as string | undefined);
}

/** The document's head: `{"format":...,"version":...,"createdAt":...` (no closing brace). */
const head = (): string =>
  JSON.stringify({
    format: TEMPLATE_FORMAT,
    version: TEMPLATE_VERSION,
    createdAt: new Date().toISOString(),
  }).slice(0, -1);

/**
 * The JSON text of the service's `exportDocument()`, byte for byte, and its sections' names.
 */
export async function exportText(sections: ConfigSection[]): Promise<{ text: string; sections: string[] }> {
  const start = head();
  const parts: string[] = [];
  const names: string[] = [];
  for (const s of sections) {
    const text = await sectionText(s);
    names.push(s.name);
    if (text !== undefined) parts.push(`${JSON.stringify(s.name)}:${text}`);
  }
  return { text: `${start},"sections":{${parts.join(',')}}}`, sections: names };
}

export interface ExportBytes {
  /** The UTF-8 bytes of `exportText`'s text, in pieces (in order: never joined into one buffer). */
  pieces: Buffer[];
  /** The bytes of the pieces in all. */
  size: number;
  sections: string[];
  /** The byte range (`[start, end)`) of each exported section's value, in the order of the text. */
  ranges: Array<[number, number]>;
}

/**
 * `exportText` as UTF-8 bytes, in the sections' pieces: no string of the whole document (joined,
 * flattened and encoded again: each a pass over 27 MB for 100,000 tags), and no buffer of it either
 * (a copy of 27 MB into fresh memory, whose first touch costs more than the copy on a VM): the
 * save stores the pieces' gzip and a download sends them as they are. `each`, when given, is handed
 * every piece of the document in order as soon as it is written (a save gzips them while the rest
 * is read: `Packer`).
 */
export async function exportBytes(
  sections: ConfigSection[],
  each: (piece: Buffer) => void = () => undefined,
): Promise<ExportBytes> {
  const pieces: Buffer[] = [];
  const push = (piece: Buffer) => {
    pieces.push(piece);
    each(piece);
  };
  push(Buffer.from(`${head()},"sections":{`, 'utf8'));
  const names: string[] = [];
  const ranges: Array<[number, number]> = [];
  let at = pieces[0]!.length;
  for (const s of sections) {
    names.push(s.name);
    let text: string | undefined;
    if (!s.exportJsonBytes) {
      text = await sectionText(s);
      if (text === undefined) continue;
    }
    const key = Buffer.from(`${ranges.length > 0 ? ',' : ''}${JSON.stringify(s.name)}:`, 'utf8');
    push(key);
    at += key.length;
    const start = at;
    const add = (b: Buffer) => {
      at += b.length;
      push(b);
    };
    let handed = 0;
    const value = s.exportJsonBytes
      ? await s.exportJsonBytes((b) => {
          handed++;
          add(b);
        })
      : [Buffer.from(text!, 'utf8')];
    // A section that does not hand its pieces as it writes them: its pieces now.
    if (handed === 0) value.forEach(add);
    ranges.push([start, at]);
  }
  push(Buffer.from('}}', 'utf8'));
  return { pieces, size: at + 2, sections: names, ranges };
}

/** How long the bytes of a saved export wait for their download. */
const RECENT_TTL_MS = 60_000;

/**
 * The bytes (pieces) of the last configuration saved from the current one (`createFromCurrent`),
 * kept for that template's first download: one document at a time, for at most a minute, dropped
 * when the template is deleted or another is saved. A download takes them; a later download reads
 * the store.
 */
export class RecentExport {
  #kept: { id: string; pieces: Buffer[]; ranges: Array<[number, number]>; timer: NodeJS.Timeout } | undefined;

  keep(id: string, pieces: Buffer[], ranges: Array<[number, number]>): void {
    this.clear();
    const timer = setTimeout(() => this.drop(id), RECENT_TTL_MS);
    timer.unref();
    this.#kept = { id, pieces, ranges, timer };
  }

  /** The kept pieces and section ranges of template `id`, once (undefined: not kept). */
  take(id: string): { pieces: Buffer[]; ranges: Array<[number, number]> } | undefined {
    const k = this.#kept;
    if (!k || k.id !== id) return undefined;
    this.clear();
    return { pieces: k.pieces, ranges: k.ranges };
  }

  /** Drops what is kept for these templates (deleted, or expired). */
  drop(...ids: string[]): void {
    if (this.#kept && ids.includes(this.#kept.id)) this.clear();
  }

  clear(): void {
    if (this.#kept) clearTimeout(this.#kept.timer);
    this.#kept = undefined;
  }
}
