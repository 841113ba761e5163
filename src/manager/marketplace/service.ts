/**
 * The marketplace catalogue (`/mpcs/`): items of five kinds (content.ts) with versions
 * (`major.minor.patch`, each published once and never changed, newer than the one before),
 * categories and a text search; published, changed and deleted by a global admin, read by any
 * token that holds a role. Installs are install.ts. Managers that import from this catalogue
 * through their asset hub report usage events, counted per item. No HTTP here.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, forbidden, notFound, ERRORS } from '../../kernel/errors.js';
import type { ListSpec } from '../../kernel/paging.js';
import { isGlobal, type Principal } from '../auth/index.js';
import { checkContent, versionSeq, type ItemKind } from './content.js';
import type { ItemRow, MarketplaceRepository, VersionRow } from './repository.js';

export interface MarketplaceLimits {
  maxItems: number;
  maxVersions: number;
  maxContentBytes: number;
  /** Usage events remembered (for their ids); older ones are forgotten, their counts stay. */
  maxEvents: number;
}

export interface PublishInput {
  name: string;
  kind: ItemKind;
  description?: string | undefined;
  categories?: string[] | undefined;
  version: string;
  changelog?: string | undefined;
  content: unknown;
}

export interface VersionInput {
  version: string;
  changelog?: string | undefined;
  content: unknown;
}

const iso = (ms: number) => new Date(Number(ms)).toISOString();

export function itemView(i: ItemRow) {
  return {
    id: i.id,
    name: i.name,
    kind: i.kind as ItemKind,
    description: i.description,
    categories: JSON.parse(i.categories) as string[],
    latestVersion: i.latest_version,
    versions: Number(i.versions),
    installs: Number(i.installs),
    imports: Number(i.imports),
    createdBy: i.created_by,
    createdAt: iso(i.created_at),
    updatedBy: i.updated_by,
    updatedAt: iso(i.updated_at),
  };
}
export type ItemView = ReturnType<typeof itemView>;

export function versionView(v: Omit<VersionRow, 'content'>) {
  return {
    itemId: v.item_id,
    version: v.version,
    changelog: v.changelog,
    size: Number(v.size),
    publishedBy: v.published_by,
    publishedAt: iso(v.published_at),
  };
}

function categoriesOf(list: string[] | undefined): string[] {
  const out = [...new Set((list ?? []).map((c) => c.trim().toLowerCase()).filter((c) => c !== ''))];
  for (const c of out)
    if (!/^[a-z0-9][a-z0-9 ._-]{0,49}$/.test(c))
      throw badRequest(
        `category "${c}" must be 1 to 50 letters, digits, spaces, dots, dashes or underscores`,
      );
  if (out.length > 10) throw badRequest('an item has at most 10 categories');
  return out.sort();
}

function nameOf(name: string): string {
  const n = name.trim();
  if (n === '' || n.length > 200) throw badRequest('name must have 1 to 200 characters');
  return n;
}

const searchText = (name: string, description: string, categories: string[]) =>
  [name, description, ...categories].join(' ').toLowerCase();

export class MarketplaceService {
  readonly #repo: MarketplaceRepository;
  readonly #limits: MarketplaceLimits;
  readonly #log: Logger;

  constructor(repo: MarketplaceRepository, limits: MarketplaceLimits, logger: Logger) {
    this.#repo = repo;
    this.#limits = limits;
    this.#log = logger;
  }

  #requireAdmin(principal: Principal, what: string): void {
    if (!isGlobal(principal, 'admin')) throw forbidden(`${what} needs a global admin token`);
  }

  #contentText(kind: ItemKind, content: unknown): string {
    if (content === undefined || content === null) throw badRequest('content is required');
    const text = JSON.stringify(checkContent(kind, content));
    if (Buffer.byteLength(text) > this.#limits.maxContentBytes)
      throw new AppError(
        ERRORS.payloadTooLarge,
        `the content of an item version has at most ${this.#limits.maxContentBytes} bytes`,
      );
    return text;
  }

  async publish(principal: Principal, input: PublishInput) {
    this.#requireAdmin(principal, 'publishing to the marketplace');
    const name = nameOf(input.name);
    const seq = versionSeq(input.version);
    const categories = categoriesOf(input.categories);
    const description = input.description ?? '';
    const content = this.#contentText(input.kind, input.content);
    const now = Date.now();
    const item: ItemRow = {
      id: randomUUID(),
      name,
      kind: input.kind,
      description,
      categories: JSON.stringify(categories),
      search: searchText(name, description, categories),
      latest_version: input.version,
      latest_seq: seq,
      versions: 1,
      installs: 0,
      imports: 0,
      created_by: principal.subject,
      created_at: now,
      updated_by: principal.subject,
      updated_at: now,
    };
    const version: VersionRow = {
      item_id: item.id,
      version: input.version,
      seq,
      changelog: input.changelog ?? '',
      content,
      size: Buffer.byteLength(content),
      published_by: principal.subject,
      published_at: now,
    };
    await this.#repo.transaction(async (repo) => {
      if ((await repo.countItems()) >= this.#limits.maxItems)
        throw conflict(`the marketplace keeps at most ${this.#limits.maxItems} items; delete some first`);
      if (await repo.itemByName(name)) throw conflict(`an item named "${name}" exists`);
      await repo.insertItem(item, version);
    });
    this.#log.info(
      { itemId: item.id, name, kind: item.kind, version: input.version },
      'marketplace item published',
    );
    return { ...itemView(item), version: versionView(version) };
  }

  async publishVersion(principal: Principal, itemId: string, input: VersionInput) {
    this.#requireAdmin(principal, 'publishing to the marketplace');
    const seq = versionSeq(input.version);
    const now = Date.now();
    const out = await this.#repo.transaction(async (repo) => {
      const item = await repo.item(itemId);
      if (!item) throw notFound(`marketplace item "${itemId}" not found`);
      const content = this.#contentText(item.kind as ItemKind, input.content);
      if (await repo.version(itemId, input.version))
        throw conflict(
          `version ${input.version} of "${item.name}" is published already; versions never change`,
        );
      if (seq <= Number(item.latest_seq))
        throw conflict(`version ${input.version} is not newer than the latest, ${item.latest_version}`);
      if (Number(item.versions) >= this.#limits.maxVersions)
        throw conflict(`an item keeps at most ${this.#limits.maxVersions} versions`);
      const version: VersionRow = {
        item_id: itemId,
        version: input.version,
        seq,
        changelog: input.changelog ?? '',
        content,
        size: Buffer.byteLength(content),
        published_by: principal.subject,
        published_at: now,
      };
      const change = {
        latest_version: input.version,
        latest_seq: seq,
        versions: Number(item.versions) + 1,
        updated_by: principal.subject,
        updated_at: now,
      };
      await repo.insertVersion(version, change);
      return { ...itemView({ ...item, ...change }), version: versionView(version) };
    });
    this.#log.info({ itemId, version: input.version }, 'marketplace item version published');
    return out;
  }

  async update(
    principal: Principal,
    itemId: string,
    input: { name?: string | undefined; description?: string | undefined; categories?: string[] | undefined },
  ) {
    this.#requireAdmin(principal, 'changing a marketplace item');
    return this.#repo.transaction(async (repo) => {
      const item = await repo.item(itemId);
      if (!item) throw notFound(`marketplace item "${itemId}" not found`);
      const name = input.name === undefined ? item.name : nameOf(input.name);
      if (name !== item.name && (await repo.itemByName(name)))
        throw conflict(`an item named "${name}" exists`);
      const description = input.description ?? item.description;
      const categories =
        input.categories === undefined
          ? (JSON.parse(item.categories) as string[])
          : categoriesOf(input.categories);
      const change = {
        name,
        description,
        categories: JSON.stringify(categories),
        search: searchText(name, description, categories),
        updated_by: principal.subject,
        updated_at: Date.now(),
      };
      await repo.updateItem(itemId, change);
      return itemView({ ...item, ...change });
    });
  }

  async remove(principal: Principal, itemId: string): Promise<void> {
    this.#requireAdmin(principal, 'deleting a marketplace item');
    await this.#readable(itemId);
    await this.#repo.deleteItem(itemId);
    this.#log.info({ itemId }, 'marketplace item deleted');
  }

  async #readable(itemId: string): Promise<ItemRow> {
    const item = await this.#repo.item(itemId);
    if (!item) throw notFound(`marketplace item "${itemId}" not found`);
    return item;
  }

  /** Items paged; `q` searches name, description and categories; `kind` and `category` narrow. */
  async list(
    spec: ListSpec,
    search: { q?: string | undefined; kind?: string | undefined; category?: string | undefined },
  ) {
    const filter = [...spec.filter];
    if (search.q !== undefined && search.q.trim() !== '')
      filter.push({ field: 'search', op: 'contains', value: search.q.trim().toLowerCase() });
    if (search.kind !== undefined) filter.push({ field: 'kind', op: 'eq', value: search.kind });
    if (search.category !== undefined)
      filter.push({
        field: 'categories',
        op: 'contains',
        value: JSON.stringify(search.category.trim().toLowerCase()),
      });
    const page = await this.#repo.listItems({ ...spec, filter });
    return { items: page.items.map(itemView), total: page.total };
  }

  async get(itemId: string) {
    const item = await this.#readable(itemId);
    const versions = await this.#repo.listVersions(itemId, {
      offset: 0,
      limit: 20,
      sort: [{ field: 'version', order: 'desc' }],
      filter: [],
    });
    return { ...itemView(item), recentVersions: versions.items.map(versionView) };
  }

  async versions(itemId: string, spec: ListSpec) {
    await this.#readable(itemId);
    const page = await this.#repo.listVersions(itemId, spec);
    return { items: page.items.map(versionView), total: page.total };
  }

  /** One version with its content (`latest` for the newest). */
  async version(itemId: string, version: string) {
    const item = await this.#readable(itemId);
    const v = await this.#repo.version(itemId, version === 'latest' ? item.latest_version : version);
    if (!v) throw notFound(`version ${version} of marketplace item "${item.name}" not found`);
    return {
      ...versionView(v),
      kind: item.kind as ItemKind,
      name: item.name,
      content: JSON.parse(v.content) as unknown,
    };
  }

  async categories() {
    const counts = await this.#repo.categoryCounts();
    const items = [...counts]
      .sort((a, b) => a[0].localeCompare(b[0]))
      .map(([name, items]) => ({ name, items }));
    return { items, total: items.length };
  }

  /** Usage events from a manager's asset hub (each event id counted once). */
  async recordEvents(
    principal: Principal,
    events: { eventId: string; itemId: string; version: string; action: 'IMPORT' | 'UPDATE' | 'DELETE' }[],
  ) {
    const now = Date.now();
    const accepted = await this.#repo.recordEvents(
      events.map((e) => ({
        event_id: e.eventId,
        item_id: e.itemId,
        version: e.version,
        action: e.action,
        reporter: principal.subject,
        received_at: now,
      })),
      this.#limits.maxEvents,
    );
    return { received: events.length, accepted };
  }

  /** The newest usage events of an item (admin). */
  async events(principal: Principal, itemId: string) {
    this.#requireAdmin(principal, 'reading usage events');
    await this.#readable(itemId);
    const rows = await this.#repo.events(itemId, 100);
    const items = rows.map((e) => ({
      eventId: e.event_id,
      version: e.version,
      action: e.action,
      reporter: e.reporter,
      receivedAt: iso(e.received_at),
    }));
    return { items, total: items.length };
  }

  /** The item and one version's content, for installs. */
  async forInstall(itemId: string, version: string | undefined) {
    const item = await this.#readable(itemId);
    const v = await this.#repo.version(itemId, version ?? item.latest_version);
    if (!v) throw notFound(`version ${version} of marketplace item "${item.name}" not found`);
    return { item, version: v };
  }
}
