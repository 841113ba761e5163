/**
 * What a preview with `withContent` shows of one device: per section of the template, the part of
 * the device's current configuration that the apply touches (`current`) beside the template's
 * content with the device's parameters substituted (`proposed`), for a diff in the console. A
 * section's lists of items (devices, access keys, models...) are narrowed to the items the
 * template names, and those the edge's preview says it would remove; everything else of the
 * section is kept. Plain functions, no I/O.
 */
import { substitute, type TemplateDocument } from '../../kernel/template-envelope.js';
import type { Parameters } from './parameters.js';
import { TEMPLATE_LIMITS } from './limits.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** An item's key as the edge keys it (devices and models by `Name`, access keys by `id`...). */
function keyOf(item: unknown): string | undefined {
  if (!isObj(item)) return undefined;
  for (const k of ['Name', 'name', 'client_id', 'id', 'ID']) if (typeof item[k] === 'string') return item[k];
  return undefined;
}

/** `current` with its keyed lists narrowed to the keys of `proposed` and `removed`. */
function narrow(current: unknown, proposed: unknown, removed: Set<string>): unknown {
  if (!isObj(current) || !isObj(proposed)) return current;
  const out: Obj = {};
  for (const [field, value] of Object.entries(current)) {
    const wanted = proposed[field];
    if (!Array.isArray(value) || !value.every((v) => keyOf(v) !== undefined)) {
      out[field] = value;
      continue;
    }
    const keys = new Set(Array.isArray(wanted) ? wanted.map(keyOf).filter((k) => k !== undefined) : []);
    out[field] = value.filter((v) => keys.has(keyOf(v)!) || removed.has(keyOf(v)!));
  }
  return out;
}

export interface PreviewContent {
  sections: Record<string, { current: unknown; proposed: unknown }>;
}

/**
 * The content of one device's preview: `doc` (the template) with `parameters` (the device's
 * merged values) beside `currentDoc` (the device's configuration); `removed` per section from
 * the edge's preview. Larger than the bound: `{ truncated: true }`.
 */
export function previewContent(
  doc: TemplateDocument,
  currentDoc: TemplateDocument,
  parameters: Parameters | undefined,
  removed: Record<string, string[]>,
): PreviewContent | { truncated: true; bytes: number } {
  const sections: PreviewContent['sections'] = {};
  for (const [name, content] of Object.entries(doc.sections)) {
    const values = { ...doc.parameters?.[name], ...parameters?.[name] };
    const proposed = substitute(content, values, []);
    // The export writes `{{` as `\{{` (no parameter): read back as the edge reads it.
    const current = substitute(currentDoc.sections[name] ?? null, {}, []);
    sections[name] = { current: narrow(current, proposed, new Set(removed[name] ?? [])), proposed };
  }
  const out = { sections };
  const bytes = Buffer.byteLength(JSON.stringify(out));
  return bytes > TEMPLATE_LIMITS.maxPreviewContentBytes ? { truncated: true, bytes } : out;
}
