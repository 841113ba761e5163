/**
 * A fleet twin model as the manager keeps it (`/api/v1/dt2`) and as it goes to an edge: the
 * `twins` section of a configuration template (docs/configuration-templates.md), everything by
 * name. The manager's document adds IDs and the DT2 fields of a dynamic attribute (contract part
 * 2.10: `NestedModelID`, `NestedModelName`, `NestedInstanceID`, `NestedInstanceName`,
 * `TopicExpressionConverted`, `Transformation`).
 */
import { badRequest } from '../../kernel/errors.js';

export interface KeyValue {
  Key: string;
  Value: string;
}

export interface Transformation {
  Name: string;
  Expression: string;
  Description?: string | undefined;
}

export interface Dt2Attribute {
  ID: string;
  Name: string;
  Description: string;
  Type: 'topic' | 'nestedModel';
  AttributeType: 'Regular' | 'UNS' | 'AssetHierarchy';
  Topic: string;
  /** The topic as the edge's DataHub subject (`/` becomes `.`, MQTT `+`/`#` become `*`/`>`). */
  TopicExpressionConverted: string;
  /** A transformation of the model, by name. */
  Transformation: string | null;
  NestedModelID: string | null;
  NestedModelName: string | null;
  NestedInstanceID: string | null;
  NestedInstanceName: string | null;
}

export interface Dt2Instance {
  ID: string;
  Name: string;
  Description?: string | undefined;
  Topic?: string | undefined;
  Enabled?: boolean | undefined;
  StaticAttributes?: KeyValue[] | undefined;
  Parameters?: KeyValue[] | undefined;
}

export interface Dt2Document {
  Name: string;
  Assets: string;
  Description: string;
  PublishOnChange?: boolean | undefined;
  PublishIntervalMs?: number | undefined;
  StaleAfterMs?: number | undefined;
  StaticAttributes: KeyValue[];
  Parameters: KeyValue[];
  DynamicAttributes: Dt2Attribute[];
  Instances: Dt2Instance[];
  Hierarchy?: unknown[] | undefined;
  Transformations: Transformation[];
}

/** The DataHub subject form of a topic expression (placeholders `{{Param}}` kept). */
export function convertTopic(topic: string): string {
  return topic
    .split('/')
    .filter((p, i, all) => p !== '' || (i > 0 && i < all.length - 1))
    .map((p) => (p === '+' ? '*' : p === '#' ? '>' : p))
    .join('.');
}

/** The model as the `twins` section's model (by name, no IDs), for an edge. */
export function sectionModel(d: Dt2Document) {
  return {
    Name: d.Name,
    Assets: d.Assets,
    Description: d.Description,
    ...(d.PublishOnChange !== undefined ? { PublishOnChange: d.PublishOnChange } : {}),
    ...(d.PublishIntervalMs !== undefined ? { PublishIntervalMs: d.PublishIntervalMs } : {}),
    ...(d.StaleAfterMs !== undefined ? { StaleAfterMs: d.StaleAfterMs } : {}),
    StaticAttributes: d.StaticAttributes,
    Parameters: d.Parameters,
    DynamicAttributes: d.DynamicAttributes.map((a) => ({
      Name: a.Name,
      Description: a.Description,
      Type: a.Type,
      AttributeType: a.AttributeType,
      ...(a.Type === 'topic' ? { Topic: a.TopicExpressionConverted, Transformation: a.Transformation } : {}),
      ...(a.Type === 'nestedModel'
        ? a.NestedInstanceName
          ? { NestedInstance: { Model: a.NestedModelName!, Instance: a.NestedInstanceName } }
          : { NestedModel: a.NestedModelName }
        : {}),
    })),
    Instances: d.Instances.map(({ ID: _id, ...i }) => ({ Source: 'local', ...i })),
    ...(d.Hierarchy !== undefined ? { Hierarchy: d.Hierarchy } : {}),
  };
}

/** A CSV line of instances: `Name` and optional `Description`, `Topic`, `Enabled`, `param.<Key>`, `static.<Key>`. */
export function instanceOfLine(
  header: string[],
  values: string[],
  parameters: Set<string> | null,
): Omit<Dt2Instance, 'ID'> {
  if (values.length !== header.length)
    throw badRequest(`the line has ${values.length} values, the header ${header.length}`);
  const inst: Omit<Dt2Instance, 'ID'> = { Name: '' };
  const params: KeyValue[] = [];
  const statics: KeyValue[] = [];
  header.forEach((h, i) => {
    const v = values[i]!;
    if (h === 'Name') inst.Name = v.trim();
    else if (h === 'Description') inst.Description = v;
    else if (h === 'Topic') {
      if (v !== '') inst.Topic = v;
    } else if (h === 'Enabled') {
      if (v !== '' && v !== 'true' && v !== 'false')
        throw badRequest(`Enabled must be true or false, not "${v}"`);
      if (v !== '') inst.Enabled = v === 'true';
    } else if (h.startsWith('param.')) {
      const key = h.slice(6);
      if (parameters && !parameters.has(key))
        throw badRequest(`parameter "${key}" is not a parameter of the model`);
      if (v !== '') params.push({ Key: key, Value: v });
    } else if (h.startsWith('static.')) {
      if (v !== '') statics.push({ Key: h.slice(7), Value: v });
    }
  });
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(inst.Name)) {
    throw badRequest(`Name "${inst.Name}" must have 1 to 100 letters, digits, _ or -`);
  }
  if (params.length) inst.Parameters = params;
  if (statics.length) inst.StaticAttributes = statics;
  return inst;
}

export const CSV_HEADER_FIELDS = ['Name', 'Description', 'Topic', 'Enabled'];

/**
 * The twins section with every `{{` written `\\{{`: a twins placeholder (`{{Param}}`, an instance
 * parameter) is not one of the configuration template's own parameters (a `{{` never appears
 * outside a string in JSON, so the text can be rewritten as a whole).
 */
export function escapePlaceholders<T>(section: T): T {
  return JSON.parse(JSON.stringify(section).replace(/\{\{/g, '\\\\{{')) as T;
}
