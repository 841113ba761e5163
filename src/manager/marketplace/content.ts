/**
 * What a marketplace item holds, by kind, and how an item reaches an edge:
 *
 * | kind                     | content                                                        | installed as                                            |
 * | ------------------------ | -------------------------------------------------------------- | ------------------------------------------------------- |
 * | `CONFIGURATION_TEMPLATE` | a configuration template document (docs/configuration-templates.md) | the document, by a `TEMPLATE_APPLY` task             |
 * | `TWIN_MODEL`             | the twins section: `{ models: [...], transformations?: [...] }` | a template of that one section, by `TEMPLATE_APPLY`    |
 * | `ANALYTICS_WORKSPACE`    | one workspace as `ExportWorkspace` answers it                  | a template of the analytics section, by `TEMPLATE_APPLY` |
 * | `APPLICATION`            | `{ containers: [ <POST /apps/dc/containers/ body> ] }`         | a `MARKETPLACE_APP_INSTALL` task: each container created |
 * | `HIERARCHY_TEMPLATE`     | an asset hierarchy template, opaque here                       | not installed on edges: imported by an asset hub         |
 */
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import {
  checkEnvelope,
  TEMPLATE_FORMAT,
  TEMPLATE_VERSION,
  type TemplateDocument,
} from '../../kernel/template-envelope.js';

export const ITEM_KINDS = [
  'CONFIGURATION_TEMPLATE',
  'TWIN_MODEL',
  'ANALYTICS_WORKSPACE',
  'APPLICATION',
  'HIERARCHY_TEMPLATE',
] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

/** Kinds that can be installed on edges. */
export const INSTALLABLE: readonly ItemKind[] = [
  'CONFIGURATION_TEMPLATE',
  'TWIN_MODEL',
  'ANALYTICS_WORKSPACE',
  'APPLICATION',
];

/** Containers of one application item at most. */
export const MAX_APP_CONTAINERS = 20;

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** `major.minor.patch`, each 0 to 99999, as a number that orders versions. */
export function versionSeq(version: string): number {
  const m = /^(\d{1,5})\.(\d{1,5})\.(\d{1,5})$/.exec(version);
  if (!m) throw badRequest(`version "${version}" must be major.minor.patch (e.g. 1.0.0), each at most 99999`);
  return Number(m[1]) * 1e10 + Number(m[2]) * 1e5 + Number(m[3]);
}

/** The content checked for its kind (a 400 that names what is wrong otherwise). */
export function checkContent(kind: ItemKind, content: unknown): unknown {
  const bad = (m: string) => badRequest(`content of a ${kind} item ${m}`);
  switch (kind) {
    case 'CONFIGURATION_TEMPLATE':
      return checkEnvelope(content);
    case 'TWIN_MODEL': {
      if (!isObject(content)) throw bad('must be the twins section, an object { models, transformations? }');
      for (const k of Object.keys(content))
        if (k !== 'models' && k !== 'transformations') throw bad(`has an unknown field "${k}"`);
      if (!Array.isArray(content.models) || content.models.length === 0)
        throw bad('must have models, a non-empty array');
      if (content.transformations !== undefined && !Array.isArray(content.transformations))
        throw bad('has transformations that are not an array');
      return content;
    }
    case 'ANALYTICS_WORKSPACE': {
      if (!isObject(content) || !isObject(content.workspace) || typeof content.workspace.name !== 'string')
        throw bad(
          'must be a workspace document as ExportWorkspace answers it ({ version, workspace: { name }, ... })',
        );
      return content;
    }
    case 'APPLICATION': {
      if (!isObject(content) || !Array.isArray(content.containers) || content.containers.length === 0)
        throw bad('must be { containers: [ ... ] } with at least one container');
      if (content.containers.length > MAX_APP_CONTAINERS)
        throw bad(`has more than ${MAX_APP_CONTAINERS} containers`);
      for (const [i, c] of content.containers.entries())
        if (!isObject(c) || typeof c.Image !== 'string' || c.Image === '')
          throw bad(`containers[${i}] must be an object with an Image`);
      return content;
    }
    case 'HIERARCHY_TEMPLATE':
      if (!isObject(content)) throw bad('must be an object');
      return content;
  }
}

/** The configuration template that installs an item of a template-shaped kind. */
export function templateDocumentOf(kind: ItemKind, content: unknown): TemplateDocument {
  const doc = (sections: Record<string, unknown>): TemplateDocument => ({
    format: TEMPLATE_FORMAT,
    version: TEMPLATE_VERSION,
    sections,
  });
  switch (kind) {
    case 'CONFIGURATION_TEMPLATE':
      return content as TemplateDocument;
    case 'TWIN_MODEL':
      return doc({
        twins: {
          transformations: (content as { transformations?: unknown[] }).transformations ?? [],
          models: (content as { models: unknown[] }).models,
        },
      });
    case 'ANALYTICS_WORKSPACE':
      return doc({ analytics: { workspaces: [content], variables: {} } });
    default:
      throw new AppError(
        ERRORS.badRequest,
        `a ${kind} item is not installed through a configuration template`,
      );
  }
}
