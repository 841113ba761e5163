/**
 * Composition: a template made of other templates. Each section of the composed document comes
 * from exactly one part (a section in two parts is refused, naming both), and so do its parameter
 * defaults; the parts are recorded (id, friendly name, version) so that the composition can be
 * shown and made again. Encrypted parts are refused (their secrets are sealed under each part's
 * own key). Plain functions, no I/O.
 */
import { badRequest } from '../../kernel/errors.js';
import {
  TEMPLATE_FORMAT,
  TEMPLATE_VERSION,
  checkEnvelope,
  type TemplateDocument,
} from '../../kernel/template-envelope.js';

export interface PartRef {
  id: string;
  friendlyName: string;
  version: number;
}

/** At most this many parts in one composed template. */
export const MAX_PARTS = 20;

/** One document of `parts`, in their order; a 400 naming the part that cannot be composed. */
export function composeDocuments(parts: { ref: PartRef; doc: TemplateDocument }[]): TemplateDocument {
  if (parts.length < 2) throw badRequest('a composed template has at least two parts');
  if (parts.length > MAX_PARTS) throw badRequest(`a composed template has at most ${MAX_PARTS} parts`);
  const ids = new Set(parts.map((p) => p.ref.id));
  if (ids.size !== parts.length) throw badRequest('a template is named twice in parts');
  const sections: Record<string, unknown> = {};
  const parameters: Record<string, Record<string, string>> = {};
  const owner = new Map<string, string>();
  for (const { ref, doc } of parts) {
    if (doc.encryption)
      throw badRequest(
        `template "${ref.friendlyName}" holds encrypted secrets and cannot be a part; compose templates without secrets`,
      );
    for (const [name, content] of Object.entries(doc.sections)) {
      const first = owner.get(name);
      if (first !== undefined)
        throw badRequest(
          `section "${name}" is in both "${first}" and "${ref.friendlyName}"; a section comes from one part`,
        );
      owner.set(name, ref.friendlyName);
      sections[name] = content;
      const defaults = doc.parameters?.[name];
      if (defaults) parameters[name] = { ...defaults };
    }
  }
  return checkEnvelope({
    format: TEMPLATE_FORMAT,
    version: TEMPLATE_VERSION,
    createdAt: new Date().toISOString(),
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
    sections,
  });
}

/** The parts recorded on a template row (null: not composed). */
export function partsOf(text: string | null): PartRef[] | null {
  return text === null ? null : (JSON.parse(text) as PartRef[]);
}
