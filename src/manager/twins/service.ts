/**
 * Fleet twins (DT2): twin models kept by the manager per company, built in one call
 * (`model/complete`) or attribute by attribute (`dynamic-attribute`, with the nested-model fields),
 * instances parsed from CSV, and a model deployed to every edge placed under a branch of the asset
 * hierarchy as a configuration template task: it becomes a `/digital-twins` model on each edge,
 * where its instances run. Plain domain code: no HTTP here.
 */
import type { Logger } from 'pino';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { TEMPLATE_FORMAT, TEMPLATE_VERSION } from '../../kernel/template-envelope.js';
import { requireRole, roleAt, type Principal } from '../auth/index.js';
import { parseCsv } from '../hierarchy/index.js';
import {
  convertTopic,
  escapePlaceholders,
  CSV_HEADER_FIELDS,
  instanceOfLine,
  sectionModel,
  type Dt2Attribute,
  type Dt2Document,
  type Dt2Instance,
  type Transformation,
} from './model.js';
import type { Dt2ModelRow, Dt2Repository } from './repository.js';

/** What DT2 needs of the other modules (fleet, hierarchy, templates), handed in by module.ts. */
export interface Dt2Deps {
  company(
    principal: Principal,
    ref: { companyName?: string; companyId?: string },
  ): Promise<{ id: string; name: string }>;
  devicesUnder(principal: Principal, companyName: string, nodeId: string): Promise<string[]>;
  deploy(
    principal: Principal,
    companyId: string,
    friendlyName: string,
    document: unknown,
    deviceIds: string[],
  ): Promise<{ templateId: string; task: unknown }>;
}

export type AttributeInput = Partial<Omit<Dt2Attribute, 'ID' | 'Transformation'>> & {
  Name: string;
  Transformation?: string | Transformation | null | undefined;
};

export type CompleteModelInput = Omit<Partial<Dt2Document>, 'DynamicAttributes' | 'Instances'> & {
  Name: string;
  Assets: string;
  DynamicAttributes?: AttributeInput[] | undefined;
  Instances?: Omit<Dt2Instance, 'ID'>[] | undefined;
};

const NAME = /^[A-Za-z0-9_-]{1,100}$/;
const checkName = (v: string, what: string) => {
  if (!NAME.test(v)) throw badRequest(`${what} "${v}" must have 1 to 100 letters, digits, _ or -`);
};

export class Dt2Service {
  readonly #repo: Dt2Repository;
  readonly #deps: Dt2Deps;
  readonly #maxModels: number;
  readonly #log: Logger;

  constructor(repo: Dt2Repository, deps: Dt2Deps, maxModels: number, log: Logger) {
    this.#repo = repo;
    this.#deps = deps;
    this.#maxModels = maxModels;
    this.#log = log;
  }

  async list(principal: Principal, companyName: string) {
    const c = await this.#deps.company(principal, { companyName });
    return (await this.#repo.models(c.id)).map((r) => view(r, c.name));
  }

  async get(principal: Principal, companyName: string, id: string) {
    const c = await this.#deps.company(principal, { companyName });
    return view(await this.#row(c.id, id), c.name);
  }

  async delete(principal: Principal, companyName: string, id: string): Promise<void> {
    const c = await this.#deps.company(principal, { companyName });
    requireRole(principal, { companyId: c.id }, 'operator');
    await this.#row(c.id, id);
    await this.#repo.delete(id);
  }

  /** A model with its attributes and instances in one call; a model of that name is replaced. */
  async complete(principal: Principal, companyName: string, input: CompleteModelInput) {
    const c = await this.#deps.company(principal, { companyName });
    requireRole(principal, { companyId: c.id }, 'operator');
    checkName(input.Name, 'Name');
    const doc: Dt2Document = {
      Name: input.Name,
      Assets: input.Assets,
      Description: input.Description ?? '',
      PublishOnChange: input.PublishOnChange,
      PublishIntervalMs: input.PublishIntervalMs,
      StaleAfterMs: input.StaleAfterMs,
      StaticAttributes: input.StaticAttributes ?? [],
      Parameters: input.Parameters ?? [],
      DynamicAttributes: [],
      Instances: [],
      Hierarchy: input.Hierarchy,
      Transformations: input.Transformations ?? [],
    };
    for (const a of input.DynamicAttributes ?? [])
      doc.DynamicAttributes.push(await this.#attribute(c.id, doc, a));
    for (const i of input.Instances ?? []) {
      checkName(i.Name, 'instance Name');
      if (doc.Instances.some((x) => x.Name === i.Name))
        throw badRequest(`instance "${i.Name}" appears twice`);
      doc.Instances.push({ ID: uuidv7(), ...i });
    }
    const now = Date.now();
    const existing = await this.#repo.modelByName(c.id, input.Name);
    if (existing) {
      await this.#repo.update(existing.id, JSON.stringify(doc), now);
      return {
        ...view({ ...existing, document: JSON.stringify(doc), updated_at: now }, c.name),
        Replaced: true,
      };
    }
    if ((await this.#repo.count(c.id)) >= this.#maxModels) {
      throw conflict(`a company has at most ${this.#maxModels} twin models (--dt2-max-models)`);
    }
    const row: Dt2ModelRow = {
      id: uuidv7(now),
      company_id: c.id,
      name: input.Name,
      document: JSON.stringify(doc),
      created_by: principal.username ?? principal.tokenName,
      created_at: now,
      updated_at: now,
    };
    await this.#repo.insert(row);
    return { ...view(row, c.name), Replaced: false };
  }

  /** Adds (or replaces, by `Name`) a dynamic attribute of the model `ModelID`. */
  async dynamicAttribute(principal: Principal, input: AttributeInput & { ModelID: string }) {
    const row = await this.#repo.model(input.ModelID);
    if (!row || roleAt(principal, { companyId: row.company_id }) === null) {
      throw notFound(`twin model "${input.ModelID}" not found`);
    }
    requireRole(principal, { companyId: row.company_id }, 'operator');
    const doc = JSON.parse(row.document) as Dt2Document;
    const { ModelID: _m, ...attr } = input;
    const a = await this.#attribute(row.company_id, doc, attr);
    const at = doc.DynamicAttributes.findIndex((x) => x.Name === a.Name);
    if (at >= 0) doc.DynamicAttributes[at] = { ...a, ID: doc.DynamicAttributes[at]!.ID };
    else doc.DynamicAttributes.push(a);
    await this.#repo.update(row.id, JSON.stringify(doc), Date.now());
    return { ModelID: row.id, ...(at >= 0 ? doc.DynamicAttributes[at]! : a) };
  }

  /** Each line of an instances CSV parsed; with `modelId`, checked against it, and with `save`, added. */
  async parseInstances(
    principal: Principal,
    companyName: string,
    text: string,
    o: { modelId?: string | undefined; save?: boolean | undefined },
  ) {
    const c = await this.#deps.company(principal, { companyName });
    const row = o.modelId ? await this.#row(c.id, o.modelId) : undefined;
    const doc = row ? (JSON.parse(row.document) as Dt2Document) : undefined;
    const params = doc ? new Set(doc.Parameters.map((p) => p.Key)) : null;
    const records = parseCsv(text);
    const header = records.shift()?.values.map((h) => h.trim()) ?? [];
    if (!header.includes('Name')) throw badRequest('line 1: the CSV has no "Name" column');
    const unknown = header.filter((h) => !CSV_HEADER_FIELDS.includes(h) && !/^(param|static)\..+/.test(h));
    if (unknown.length) throw badRequest(`line 1: unknown column(s) ${unknown.join(', ')}`);
    const seen = new Set(doc?.Instances.map((i) => i.Name) ?? []);
    const results = records.map((r) => {
      try {
        const instance = instanceOfLine(header, r.values, params);
        if (seen.has(instance.Name))
          throw badRequest(`instance "${instance.Name}" exists already or appears on an earlier line`);
        seen.add(instance.Name);
        return { Line: r.line, Valid: true, Instance: instance, Error: null };
      } catch (err) {
        return { Line: r.line, Valid: false, Instance: null, Error: (err as Error).message };
      }
    });
    let saved = 0;
    if (o.save && row && doc) {
      requireRole(principal, { companyId: c.id }, 'operator');
      for (const r of results) if (r.Instance) doc.Instances.push({ ID: uuidv7(), ...r.Instance });
      saved = results.filter((r) => r.Valid).length;
      await this.#repo.update(row.id, JSON.stringify(doc), Date.now());
    }
    return {
      Results: results,
      Valid: results.filter((r) => r.Valid).length,
      Invalid: results.filter((r) => !r.Valid).length,
      Saved: saved,
    };
  }

  /**
   * The model (and the models it nests) as a configuration template applied to every edge placed
   * under the node `nodeId`: one `TEMPLATE_APPLY` task (the caller needs edit access to the branch).
   */
  async deploy(principal: Principal, companyName: string, modelId: string, nodeId: string) {
    const c = await this.#deps.company(principal, { companyName });
    const row = await this.#row(c.id, modelId);
    const deviceIds = await this.#deps.devicesUnder(principal, companyName, nodeId);
    if (deviceIds.length === 0) throw badRequest(`no edge is placed under node "${nodeId}"`);
    const models = await this.#withNested(c.id, row);
    const transformations = new Map<string, Transformation>();
    for (const m of models) for (const t of m.Transformations) transformations.set(t.Name, t);
    const document = {
      format: TEMPLATE_FORMAT,
      version: TEMPLATE_VERSION,
      sections: {
        twins: escapePlaceholders({
          transformations: [...transformations.values()],
          models: models.map(sectionModel),
        }),
      },
    };
    const { templateId, task } = await this.#deps.deploy(
      principal,
      c.id,
      `dt2 ${row.name}`,
      document,
      deviceIds,
    );
    this.#log.info({ model: row.name, company: c.name, devices: deviceIds.length }, 'twin model deployed');
    return { ModelID: row.id, TemplateID: templateId, DeviceIDs: deviceIds, Task: task };
  }

  /** The model and, transitively, the models its nested attributes name (each once). */
  async #withNested(companyId: string, row: Dt2ModelRow): Promise<Dt2Document[]> {
    const out = new Map<string, Dt2Document>();
    const queue = [JSON.parse(row.document) as Dt2Document];
    while (queue.length > 0) {
      const d = queue.shift()!;
      if (out.has(d.Name)) continue;
      out.set(d.Name, d);
      for (const a of d.DynamicAttributes) {
        if (a.NestedModelName && !out.has(a.NestedModelName)) {
          const n = await this.#repo.modelByName(companyId, a.NestedModelName);
          if (!n)
            throw badRequest(
              `attribute "${a.Name}" nests model "${a.NestedModelName}", which no longer exists`,
            );
          queue.push(JSON.parse(n.document) as Dt2Document);
        }
      }
    }
    return [...out.values()].reverse();
  }

  async #row(companyId: string, id: string): Promise<Dt2ModelRow> {
    const row = await this.#repo.model(id);
    if (!row || row.company_id !== companyId) throw notFound(`twin model "${id}" not found`);
    return row;
  }

  /** An attribute checked and completed: nested references resolved (IDs and names), the topic converted. */
  async #attribute(companyId: string, doc: Dt2Document, a: AttributeInput): Promise<Dt2Attribute> {
    checkName(a.Name, 'attribute Name');
    const nested = a.NestedModelID ?? a.NestedModelName ?? a.NestedInstanceID ?? a.NestedInstanceName;
    const type = a.Type ?? (nested ? 'nestedModel' : 'topic');
    const out: Dt2Attribute = {
      ID: uuidv7(),
      Name: a.Name,
      Description: a.Description ?? '',
      Type: type,
      AttributeType: a.AttributeType ?? 'Regular',
      Topic: '',
      TopicExpressionConverted: '',
      Transformation: null,
      NestedModelID: null,
      NestedModelName: null,
      NestedInstanceID: null,
      NestedInstanceName: null,
    };
    if (type === 'topic') {
      if (nested) throw badRequest(`attribute "${a.Name}" of Type topic takes no nested model or instance`);
      const topic = a.Topic ?? a.TopicExpressionConverted ?? '';
      if (topic === '') throw badRequest(`attribute "${a.Name}" needs a Topic (or TopicExpressionConverted)`);
      out.Topic = topic;
      out.TopicExpressionConverted = a.TopicExpressionConverted ?? convertTopic(topic);
      out.Transformation = this.#transformation(doc, a.Transformation);
      return out;
    }
    if (!nested)
      throw badRequest(
        `attribute "${a.Name}" of Type nestedModel needs NestedModelID/Name or NestedInstanceID/Name`,
      );
    return this.#nested(companyId, doc, a, out);
  }

  #transformation(doc: Dt2Document, t: AttributeInput['Transformation']): string | null {
    if (t === undefined || t === null || t === '') return null;
    if (typeof t === 'string') {
      if (!doc.Transformations.some((x) => x.Name === t)) {
        throw badRequest(`transformation "${t}" is not a transformation of the model (Transformations)`);
      }
      return t;
    }
    checkName(t.Name, 'transformation Name');
    if (typeof t.Expression !== 'string' || t.Expression === '')
      throw badRequest(`transformation "${t.Name}" needs an Expression`);
    const at = doc.Transformations.findIndex((x) => x.Name === t.Name);
    if (at >= 0) doc.Transformations[at] = t;
    else doc.Transformations.push(t);
    return t.Name;
  }

  async #nested(
    companyId: string,
    doc: Dt2Document,
    a: AttributeInput,
    out: Dt2Attribute,
  ): Promise<Dt2Attribute> {
    if (
      (a.NestedModelID || a.NestedModelName) &&
      (a.NestedInstanceID || (a.NestedInstanceName && !a.NestedModelID && !a.NestedModelName))
    ) {
      throw badRequest(`attribute "${a.Name}": set NestedModelID/Name or NestedInstanceID, not both`);
    }
    const all = await this.#repo.models(companyId);
    const docs = all.map((r) => ({ id: r.id, doc: JSON.parse(r.document) as Dt2Document }));
    if (a.NestedInstanceID) {
      for (const m of docs) {
        const i = m.doc.Instances.find((x) => x.ID === a.NestedInstanceID);
        if (i)
          return {
            ...out,
            NestedModelID: m.id,
            NestedModelName: m.doc.Name,
            NestedInstanceID: i.ID,
            NestedInstanceName: i.Name,
          };
      }
      throw badRequest(
        `NestedInstanceID "${a.NestedInstanceID}" is no instance of a twin model of the company`,
      );
    }
    const model = docs.find((m) =>
      a.NestedModelID ? m.id === a.NestedModelID : m.doc.Name === a.NestedModelName,
    );
    if (!model)
      throw badRequest(
        `nested model "${a.NestedModelID ?? a.NestedModelName}" is no twin model of the company`,
      );
    if (model.doc.Name === doc.Name) throw badRequest(`attribute "${a.Name}" nests its own model`);
    const withModel = { ...out, NestedModelID: model.id, NestedModelName: model.doc.Name };
    if (!a.NestedInstanceName) return withModel;
    const i = model.doc.Instances.find((x) => x.Name === a.NestedInstanceName);
    if (!i) throw badRequest(`model "${model.doc.Name}" has no instance "${a.NestedInstanceName}"`);
    return { ...withModel, NestedInstanceID: i.ID, NestedInstanceName: i.Name };
  }
}

function view(r: Dt2ModelRow, companyName: string) {
  return {
    ID: r.id,
    CompanyName: companyName,
    ...(JSON.parse(r.document) as Dt2Document),
    CreatedBy: r.created_by,
    CreatedAt: new Date(r.created_at).toISOString(),
    UpdatedAt: new Date(r.updated_at).toISOString(),
  };
}
