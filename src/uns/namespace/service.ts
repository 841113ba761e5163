/**
 * Namespaces (a topic prefix with a description and default rules, which the accounts made by an
 * activation under that prefix receive) and topics (declared with a description, or seen on the
 * broker), for browsing.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Database, type Kysely } from '../../kernel/db/index.js';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { filterProblem, validateRules, type RuleSpec } from '../accounts/index.js';
import { TopicTree, type TopicNode } from './topic-tree.js';

export interface Namespace {
  id: string;
  prefix: string;
  description: string;
  defaultRules: RuleSpec[];
  createdAt: number;
  updatedAt: number;
}

interface NamespaceRow {
  id: string;
  prefix: string;
  description: string;
  default_rules: string;
  created_at: number;
  updated_at: number;
}

export class NamespaceService {
  readonly #db: Kysely<any>;
  readonly #log: Logger;
  readonly topics: TopicTree;

  #dropLogged = 0;
  #droppedSinceLog = 0;

  constructor(
    db: Kysely<any>,
    options: { maxTopics: number; maxTopicTreeBytes?: number | undefined; logger: Logger },
  ) {
    this.#db = db;
    this.#log = options.logger;
    this.topics = new TopicTree({
      maxTopics: options.maxTopics,
      maxBytes: options.maxTopicTreeBytes,
      onDrop: (topic, reason) => this.#logDrop(topic, reason),
    });
  }

  /** A full browser is logged at its first refusal, then at most once a minute with a count. */
  #logDrop(topic: string, reason: 'topics' | 'bytes'): void {
    this.#droppedSinceLog++;
    const now = Date.now();
    if (now - this.#dropLogged < 60_000) return;
    this.#dropLogged = now;
    const { maxTopics, maxBytes } = this.topics.limits;
    this.#log.warn(
      {
        topic: topic.length > 200 ? `${topic.slice(0, 200)}...` : topic,
        reason,
        notRecorded: this.#droppedSinceLog,
        nodes: this.topics.size,
        bytes: this.topics.bytes,
        maxTopics,
        maxBytes,
      },
      reason === 'topics'
        ? 'namespace browser full (--max-topics): topics not recorded'
        : 'namespace browser full (--max-topic-tree-bytes): topics not recorded',
    );
    this.#droppedSinceLog = 0;
  }

  /** Loads the declared topics into the tree. */
  async load(): Promise<void> {
    for (const row of await this.#db.selectFrom('uns_topic').selectAll().execute()) {
      this.topics.declare(row.path as string, row.description as string);
    }
  }

  // --- namespaces ----------------------------------------------------------------------------

  async list(): Promise<Namespace[]> {
    const rows = (await this.#db
      .selectFrom('uns_namespace')
      .selectAll()
      .orderBy('prefix')
      .execute()) as NamespaceRow[];
    return rows.map(toNamespace);
  }

  async get(id: string): Promise<Namespace> {
    const row = (await this.#db
      .selectFrom('uns_namespace')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()) as NamespaceRow | undefined;
    if (!row) throw notFound(`namespace "${id}" not found`);
    return toNamespace(row);
  }

  async create(input: {
    prefix: string;
    description?: string | null;
    defaultRules?: RuleSpec[] | null;
  }): Promise<Namespace> {
    const prefix = checkPrefix(input.prefix);
    const rules = validateRules(input.defaultRules ?? []);
    const now = Date.now();
    const row: NamespaceRow = {
      id: randomUUID(),
      prefix,
      description: input.description ?? '',
      default_rules: JSON.stringify(rules),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.#db.insertInto('uns_namespace').values(row).execute();
    } catch (err) {
      if (Database.isUniqueViolation(err))
        throw conflict(`a namespace with prefix "${prefix}" already exists`);
      throw err;
    }
    this.#log.info({ id: row.id, prefix }, 'namespace created');
    return toNamespace(row);
  }

  async update(
    id: string,
    input: { description?: string | null; defaultRules?: RuleSpec[] | null },
  ): Promise<Namespace> {
    const set: Partial<NamespaceRow> = { updated_at: Date.now() };
    if (input.description !== undefined && input.description !== null) set.description = input.description;
    if (input.defaultRules !== undefined && input.defaultRules !== null) {
      set.default_rules = JSON.stringify(validateRules(input.defaultRules));
    }
    const res = await this.#db.updateTable('uns_namespace').set(set).where('id', '=', id).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) throw notFound(`namespace "${id}" not found`);
    return this.get(id);
  }

  async remove(id: string): Promise<void> {
    const res = await this.#db.deleteFrom('uns_namespace').where('id', '=', id).executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw notFound(`namespace "${id}" not found`);
    this.#log.info({ id }, 'namespace deleted');
  }

  /** The default rules of every namespace whose prefix contains `path`. */
  async defaultRulesFor(path: string): Promise<RuleSpec[]> {
    const out: RuleSpec[] = [];
    for (const ns of await this.list()) {
      if (path === ns.prefix || path.startsWith(`${ns.prefix}/`)) out.push(...ns.defaultRules);
    }
    return out;
  }

  // --- topics --------------------------------------------------------------------------------

  async declareTopic(path: string, description: string | null): Promise<TopicNode> {
    checkTopic(path);
    const now = Date.now();
    const desc = description ?? '';
    await this.#db
      .insertInto('uns_topic')
      .values({ path, description: desc, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('path').doUpdateSet({ description: desc, updated_at: now }))
      .execute();
    const n = this.topics.declare(path, desc);
    if (!n) throw badRequest('the namespace browser is full (--max-topics, --max-topic-tree-bytes)');
    return n;
  }

  async undeclareTopic(path: string): Promise<void> {
    const res = await this.#db.deleteFrom('uns_topic').where('path', '=', path).executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw notFound(`topic "${path}" is not declared`);
    this.topics.undeclare(path);
  }
}

function checkPrefix(prefix: string): string {
  const p = prefix.replace(/\/+$/, '');
  if (p === '' || filterProblem(p) || p.includes('+') || p.includes('#')) {
    throw badRequest(`prefix must be a topic prefix without wildcards, got "${prefix}"`);
  }
  return p;
}

function checkTopic(path: string): void {
  if (path === '' || filterProblem(path) || path.includes('+') || path.includes('#')) {
    throw badRequest(`a topic must be a topic name without wildcards, got "${path}"`);
  }
}

function toNamespace(row: NamespaceRow): Namespace {
  return {
    id: row.id,
    prefix: row.prefix,
    description: row.description,
    defaultRules: JSON.parse(row.default_rules) as RuleSpec[],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
