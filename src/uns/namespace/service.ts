/**
 * Namespaces (a topic prefix with a description and default rules, which the accounts made by an
 * activation under that prefix receive) and topics (declared with a description, or seen on the
 * broker), for browsing.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Database } from '../../kernel/db/index.js';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { filterProblem, validateRules, type RuleSpec } from '../accounts/index.js';
import type { NamespaceRepository, NamespaceRow } from './repository.js';
import { TopicTree, type TopicNode } from './topic-tree.js';

export interface Namespace {
  id: string;
  prefix: string;
  description: string;
  defaultRules: RuleSpec[];
  createdAt: number;
  updatedAt: number;
}

export class NamespaceService {
  readonly #repo: NamespaceRepository;
  readonly #log: Logger;
  readonly topics: TopicTree;

  #dropLogged = 0;
  #droppedSinceLog = 0;

  constructor(
    repo: NamespaceRepository,
    options: { maxTopics: number; maxTopicTreeBytes?: number | undefined; logger: Logger },
  ) {
    this.#repo = repo;
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
    for (const row of await this.#repo.topics()) {
      this.topics.declare(row.path, row.description);
    }
  }

  // --- namespaces ----------------------------------------------------------------------------

  async list(): Promise<Namespace[]> {
    return (await this.#repo.namespaces()).map(toNamespace);
  }

  async get(id: string): Promise<Namespace> {
    const row = await this.#repo.getNamespace(id);
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
      await this.#repo.insertNamespace(row);
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
    const set: Partial<Pick<NamespaceRow, 'description' | 'default_rules'>> & { updated_at: number } = {
      updated_at: Date.now(),
    };
    if (input.description !== undefined && input.description !== null) set.description = input.description;
    if (input.defaultRules !== undefined && input.defaultRules !== null) {
      set.default_rules = JSON.stringify(validateRules(input.defaultRules));
    }
    if (!(await this.#repo.updateNamespace(id, set))) throw notFound(`namespace "${id}" not found`);
    return this.get(id);
  }

  async remove(id: string): Promise<void> {
    if (!(await this.#repo.deleteNamespace(id))) throw notFound(`namespace "${id}" not found`);
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
    await this.#repo.putTopic(path, desc, now);
    const n = this.topics.declare(path, desc);
    if (!n) throw badRequest('the namespace browser is full (--max-topics, --max-topic-tree-bytes)');
    return n;
  }

  async undeclareTopic(path: string): Promise<void> {
    if (!(await this.#repo.deleteTopic(path))) throw notFound(`topic "${path}" is not declared`);
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
