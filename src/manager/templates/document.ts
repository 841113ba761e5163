/**
 * The edge's configuration template document as the manager sees it: the envelope only
 * (docs/configuration-templates.md, format version 1). The sections are the edge's to check, at
 * preview and at apply; the manager keeps and sends the document as it is.
 */
import { AppError } from '../../kernel/errors.js';

export const TEMPLATE_FORMAT = 'millwright.config-template';
export const TEMPLATE_VERSION = 1;
const ENVELOPE_FIELDS = new Set(['format', 'version', 'createdAt', 'parameters', 'encryption', 'sections']);

export interface TemplateDocument {
  format: typeof TEMPLATE_FORMAT;
  version: number;
  createdAt?: string;
  parameters?: Record<string, Record<string, string | number | boolean>>;
  encryption?: Record<string, unknown>;
  sections: Record<string, unknown>;
}

/** The document when its envelope is one the edges read; a 400 `invalid_template` otherwise. */
export function checkEnvelope(doc: unknown): TemplateDocument {
  const bad = (message: string) => new AppError(400, 'invalid_template', `invalid template: ${message}`);
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw bad('the document must be a JSON object');
  const d = doc as Record<string, unknown>;
  for (const k of Object.keys(d)) if (!ENVELOPE_FIELDS.has(k)) throw bad(`unknown field "${k}"`);
  if (d.format !== TEMPLATE_FORMAT) throw bad(`format must be "${TEMPLATE_FORMAT}"`);
  if (d.version !== TEMPLATE_VERSION)
    throw bad(
      `version ${JSON.stringify(d.version)} is not supported; edges read version ${TEMPLATE_VERSION}`,
    );
  if (!d.sections || typeof d.sections !== 'object' || Array.isArray(d.sections))
    throw bad('sections must be an object keyed by section');
  if (d.parameters !== undefined) {
    const p = d.parameters;
    if (!p || typeof p !== 'object' || Array.isArray(p))
      throw bad('parameters must be an object keyed by section');
    for (const [section, values] of Object.entries(p)) {
      if (!values || typeof values !== 'object' || Array.isArray(values))
        throw bad(`parameters.${section} must be an object of parameter values`);
      for (const [k, v] of Object.entries(values as Record<string, unknown>))
        if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
          throw bad(`parameters.${section}.${k} must be a string, number or boolean`);
    }
  }
  if (
    d.encryption !== undefined &&
    (!d.encryption || typeof d.encryption !== 'object' || Array.isArray(d.encryption))
  )
    throw bad('encryption must be an object');
  return d as unknown as TemplateDocument;
}
