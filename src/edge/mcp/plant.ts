/**
 * The plant as the MCP tools and resources see it: devices, tags, values, history, logs and
 * integrations, read (and a tag written) through the other modules' public services only. Plain
 * functions, no MCP: every bound is checked here and every refusal is a kernel `AppError`.
 */
import { badRequest, forbidden, notFound, AppError } from '../../kernel/errors.js';
import type { Role } from '../../kernel/http/auth-types.js';
import { formatLogTime, type LogReader } from '../../kernel/logging/log-store.js';
import type { DataHub } from '../datahub/index.js';
import { writeTag, type DeviceHubService, type Register, type WriteTagResponse } from '../devicehub/index.js';
import type { HistoryService } from '../history/index.js';
import type { IntegrationService } from '../integrations/index.js';
import { toQueryParams } from '../logs/index.js';

/** Most tags one `read_values` call names. */
export const MAX_READ_TAGS = 100;
/** Most devices and tags in the tag tree resource (`millwright://tags`). */
export const TREE_MAX_DEVICES = 1000;
export const TREE_MAX_TAGS = 10_000;

export interface PlantDeps {
  devicehub: DeviceHubService;
  hub: DataHub;
  logs: LogReader;
  integrations: IntegrationService;
  /** null: the history is off (`--history=false`). */
  history: HistoryService | null;
}

const tagView = (r: Register) => ({
  id: r.ID,
  path: `${r.DeviceName}.${r.TagName}`,
  device: r.DeviceName,
  name: r.TagName,
  register: r.Name,
  valueType: r.ValueType,
  intervalMs: r.IntervalMs,
  description: r.Description,
});

function isoTime(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw badRequest(`${name} "${text}" is not an ISO 8601 time (2026-11-27T10:00:00Z)`);
  return ms;
}

/** Whether a role may write a tag: the same rule as every state change of the edge. */
export function mayWrite(role: Role | undefined): boolean {
  return role === 'admin' || role === 'operator';
}

export class Plant {
  constructor(private readonly deps: PlantDeps) {}

  async devices(limit: number, offset: number) {
    const page = await this.deps.devicehub.listDevices({ Limit: limit, Offset: offset });
    return {
      total: page.Total,
      devices: page.Items.map((d) => ({
        id: d.ID,
        name: d.Name,
        driver: d.DriverName || d.DriverID,
        description: d.Description,
      })),
    };
  }

  async tags(q: {
    device?: string | undefined;
    pattern?: string | undefined;
    limit: number;
    after?: string | undefined;
  }) {
    const page = await this.deps.devicehub.listRegisters(
      {
        Limit: q.limit,
        ...(q.device ? { DeviceID: q.device } : {}),
        ...(q.pattern ? { TagPattern: q.pattern, TagPatternSearchOption: 'CONTAINS' as const } : {}),
        ...(q.after ? { ContinueFrom: q.after } : {}),
      },
      !q.device,
    );
    return { total: page.TotalCount, next: page.Last, tags: page.Registers.map(tagView) };
  }

  /** A tag by its ID or its path `<Device>.<Tag>` (names may hold dots: every split is tried). */
  async resolve(ref: string): Promise<Register> {
    if (typeof ref !== 'string' || ref === '') throw badRequest('tag: give a tag ID or <Device>.<Tag>');
    const byId = await this.deps.devicehub.getRegister(ref);
    if (byId) return byId;
    for (let i = ref.indexOf('.'); i > 0; i = ref.indexOf('.', i + 1)) {
      const device = ref.slice(0, i);
      const name = ref.slice(i + 1);
      try {
        const page = await this.deps.devicehub.listRegisters(
          { DeviceID: device, TagPattern: name, TagPatternSearchOption: 'EXACT', Limit: 1 },
          false,
        );
        if (page.Registers[0]) return page.Registers[0];
      } catch (err) {
        if (!(err instanceof AppError) || err.status !== 404) throw err;
      }
    }
    throw notFound(`no tag "${ref}" (give a tag ID or <Device>.<Tag>; list_tags lists them)`);
  }

  async values(refs: string[]) {
    if (refs.length === 0 || refs.length > MAX_READ_TAGS)
      throw badRequest(`tags: name 1 to ${MAX_READ_TAGS} tags, got ${refs.length}`);
    const tags: Register[] = [];
    for (const ref of refs) tags.push(await this.resolve(ref));
    const states = await this.deps.devicehub.tagStatus(tags.map((t) => t.ID));
    return states.map((s, i) => ({
      id: s.ID,
      path: `${tags[i]!.DeviceName}.${tags[i]!.TagName}`,
      state: s.State,
      reason: s.Reason,
      value: s.Value,
      timestamp: s.Timestamp,
    }));
  }

  async history(q: { tag: string; from?: string | undefined; to?: string | undefined; limit: number }) {
    const history = this.deps.history;
    if (!history)
      throw badRequest('the history is off on this edge (--history=false): no recent values kept');
    const tag = await this.resolve(q.tag);
    const path = `${tag.DeviceName}.${tag.TagName}`;
    const to = isoTime('to', q.to, Date.now());
    const from = isoTime('from', q.from, to - 3_600_000);
    // The newest `limit` values of the range: the total first, then the last page.
    const head = await history.raw({ tags: [path], from, to, limit: 1, offset: 0 });
    const offset = Math.max(0, head.total - q.limit);
    const page = await history.raw({ tags: [path], from, to, limit: q.limit, offset });
    return {
      tag: path,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      total: page.total,
      values: page.items.map((v) => ({ ts: new Date(v.ts).toISOString(), value: v.value })),
    };
  }

  async write(
    role: Role | undefined,
    ref: string,
    value: unknown,
    timeoutMs?: number,
  ): Promise<WriteTagResponse & { path: string }> {
    if (!mayWrite(role))
      throw forbidden(
        `the ${role ?? 'anonymous'} role cannot write tags (write_tag needs the admin or operator role)`,
      );
    const tag = await this.resolve(ref);
    const answer = await writeTag(this.deps.hub, this.deps.devicehub, {
      ID: tag.ID,
      Value: value,
      ...(timeoutMs !== undefined ? { TimeoutMs: timeoutMs } : {}),
    });
    return { path: `${tag.DeviceName}.${tag.TagName}`, ...answer };
  }

  async logs(q: {
    level?: string | undefined;
    component?: string | undefined;
    search?: string | undefined;
    limit: number;
    cursor?: string | undefined;
  }) {
    const params = toQueryParams({
      limit: q.limit,
      ...(q.level ? { level: q.level } : {}),
      ...(q.component ? { component: q.component } : {}),
      ...(q.search ? { search: q.search } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
    const page = await this.deps.logs.query(params);
    return {
      entries: page.entries.map((e) => ({
        timestamp: formatLogTime(e.timestamp),
        level: e.level,
        component: e.component,
        message: e.message,
        fields: e.fields,
      })),
      cursor: page.cursor === null ? null : formatLogTime(page.cursor),
    };
  }

  async integrations() {
    const { Items } = await this.deps.integrations.listInstances({ Limit: 200 });
    const out = [];
    for (const i of Items) {
      const s = await this.deps.integrations.status(i.ID);
      out.push({
        id: i.ID,
        name: i.Name,
        provider: i.ProviderName,
        enabled: i.Enabled,
        state: s.InstanceState,
        reason: s.Reason,
        since: s.Since,
        lastError: s.LastError,
        lastErrorTime: s.LastErrorTime,
        counters: s.Counters,
      });
    }
    return { integrations: out };
  }

  /** The tag tree: devices with their tags, at most TREE_MAX_DEVICES and TREE_MAX_TAGS. */
  async tree() {
    const devices = await this.deps.devicehub.listDevices({ Limit: TREE_MAX_DEVICES });
    let tags = 0;
    let truncated = devices.Total > devices.Items.length;
    const out = [];
    for (const d of devices.Items) {
      const room = TREE_MAX_TAGS - tags;
      if (room <= 0) {
        truncated = true;
        break;
      }
      const page = await this.deps.devicehub.listRegisters(
        { DeviceID: d.ID, Limit: Math.min(room, 1000) },
        false,
      );
      if (page.TotalCount > page.Registers.length) truncated = true;
      tags += page.Registers.length;
      out.push({
        id: d.ID,
        name: d.Name,
        driver: d.DriverName || d.DriverID,
        uri: deviceUri(d.Name),
        tags: page.Registers.map((r) => ({ id: r.ID, name: r.TagName, valueType: r.ValueType })),
      });
    }
    return { devices: out, truncated };
  }

  /** One device, its tags (at most 1,000) and their current values. */
  async device(name: string) {
    const page = await this.deps.devicehub.listRegisters({ DeviceID: name, Limit: 1000 }, false);
    const states = page.Registers.length
      ? await this.deps.devicehub.tagStatus(page.Registers.map((r) => r.ID))
      : [];
    return {
      device: name,
      totalTags: page.TotalCount,
      tags: page.Registers.map((r, i) => ({
        ...tagView(r),
        state: states[i]?.State ?? 'Unknown',
        value: states[i]?.Value ?? null,
        timestamp: states[i]?.Timestamp ?? null,
      })),
    };
  }
}

export const deviceUri = (name: string) => `millwright://devices/${encodeURIComponent(name)}`;
