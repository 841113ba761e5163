/**
 * Edge logs across the fleet: a query, hits and statistics fanned out over the links to the
 * edges of a project (or named devices), each edge with a deadline (see fan-out.ts), merged by
 * time; and each device's log forwarding status, start and stop. No HTTP here.
 *
 * The query walks forward in time: each edge is asked for the `limit` oldest matching entries
 * after its own position (`/logs/query?start=`), the answers are merged by timestamp and the
 * `limit` oldest are answered; the cursor carries each edge's position (the timestamp of its last
 * entry answered), so that paging neither repeats nor skips an entry of an edge that answers.
 * One page holds at most `limit` × devices entries (bounded by `EDGE_LOGS_MAX_FETCH`).
 */
import { createHash } from 'node:crypto';
import { AppError, ERRORS, badRequest } from '../../kernel/errors.js';
import {
  parseLevelName,
  parseLogTime,
  formatLogTime,
  LOG_LEVEL_NAMES,
} from '../../kernel/logging/log-store.js';
import { type Principal } from '../auth/index.js';
import { principalActor, type BridgeService } from '../bridge/index.js';
import type { FleetService } from '../fleet/index.js';
import { fanOut, type EdgeOutcome } from './fan-out.js';
import {
  EDGE_LOGS_MAX_DEVICES,
  EDGE_LOGS_MAX_FETCH,
  type HitsBody,
  type QueryBody,
  type StatisticsBody,
} from './schemas.js';

type Targets = StatisticsBody;
interface Target {
  id: string;
  projectId: string;
  companyId: string;
}
interface EdgeEntry {
  timestamp: string;
  level: string;
  component: string;
  message: string;
  fields: Record<string, unknown>;
}
interface Cursor {
  v: 1;
  /** Hash of the filters: a cursor goes with the query that made it. */
  f: string;
  /** Each device's position: the timestamp of its last entry answered. */
  p: Record<string, string>;
}

/** From the first entry any edge keeps (`start=0` would mean "no start" to the edge). */
const BEGINNING = '1970-01-01T00:00:00.000001Z';

const unavailable = (o: EdgeOutcome) =>
  o.status === 'ok' ? [] : [{ deviceId: o.deviceId, status: o.status, message: o.message }];
const deviceAnswer = (o: EdgeOutcome) =>
  o.status === 'ok' ? { deviceId: o.deviceId, status: o.status } : unavailable(o)[0]!;

export class EdgeLogsService {
  constructor(
    private readonly fleet: FleetService,
    private readonly bridge: BridgeService,
  ) {}

  /** The devices of the request that the caller may read (a 404 for one it may not). */
  async #targets(principal: Principal, t: Targets): Promise<Target[]> {
    if (t.deviceIds && t.projectId) throw badRequest('send deviceIds or projectId, not both');
    if (t.deviceIds) {
      const out: Target[] = [];
      for (const id of new Set(t.deviceIds)) out.push(await this.fleet.device(principal, id));
      return out;
    }
    if (!t.projectId) throw badRequest('deviceIds or projectId is required');
    const project = await this.fleet.project(principal, t.projectId);
    const items = (await this.fleet.prettyNames(principal, t.projectId)).items;
    if (items.length > EDGE_LOGS_MAX_DEVICES)
      throw badRequest(
        `project "${t.projectId}" has ${items.length} devices: name at most ${EDGE_LOGS_MAX_DEVICES} in deviceIds`,
      );
    return items.map((d) => ({ id: d.deviceId, projectId: project.id, companyId: project.company_id }));
  }

  #filters(t: Targets): URLSearchParams {
    const q = new URLSearchParams();
    if (t.level) {
      if (!parseLevelName(t.level))
        throw badRequest(`unknown level "${t.level}": expected one of ${LOG_LEVEL_NAMES.join(', ')}`);
      q.set('level', t.level);
    }
    if (t.component) q.set('component', t.component);
    if (t.text) q.set('search', t.text);
    for (const k of ['from', 'to'] as const) {
      const v = t[k];
      if (v !== undefined && parseLogTime(v) === undefined)
        throw badRequest(
          `${k} "${v}" is not an RFC 3339 timestamp (for example 2026-11-25T22:10:01.123456Z)`,
        );
    }
    if (t.from && t.to && parseLogTime(t.from)! >= parseLogTime(t.to)!)
      throw badRequest('from must be before to');
    return q;
  }

  #ask(principal: Principal, targets: Target[], path: (t: Target) => string, deadlineMs?: number) {
    const byId = new Map(targets.map((t) => [t.id, t]));
    return fanOut(
      this.bridge,
      targets.map((t) => ({ deviceId: t.id, path: path(t) })),
      (id) => principalActor(principal, byId.get(id)!, null),
      deadlineMs ?? 5000,
    );
  }

  async query(principal: Principal, body: QueryBody) {
    const targets = await this.#targets(principal, body);
    const limit = body.limit ?? 100;
    if (limit * targets.length > EDGE_LOGS_MAX_FETCH)
      throw badRequest(
        `limit × devices is ${limit * targets.length}: at most ${EDGE_LOGS_MAX_FETCH}; lower limit or name fewer devices`,
      );
    const filters = this.#filters(body);
    const to = body.to === undefined ? undefined : parseLogTime(body.to)!;
    const hash = createHash('sha256')
      .update(JSON.stringify([filters.toString(), body.from ?? '', body.to ?? '', limit]))
      .digest('base64url')
      .slice(0, 16);
    const cursor = body.cursor === undefined ? undefined : readCursor(body.cursor, hash);
    const from = body.from === undefined ? BEGINNING : formatLogTime(parseLogTime(body.from)!);
    const position = (id: string) => cursor?.p[id] ?? from;
    const outcomes = await this.#ask(
      principal,
      targets,
      (t) => {
        const q = new URLSearchParams(filters);
        q.set('limit', String(limit));
        q.set('start', position(t.id));
        return `/logs/query?${q.toString()}`;
      },
      body.deadlineMs,
    );
    const merged: (EdgeEntry & { deviceId: string })[] = [];
    const exhausted = new Set<string>();
    for (const o of outcomes) {
      if (o.status !== 'ok') continue;
      const entries = ((o.body as { entries?: EdgeEntry[] }).entries ?? []).filter(
        (e) => to === undefined || parseLogTime(e.timestamp)! <= to,
      );
      const raw = (o.body as { entries?: EdgeEntry[] }).entries?.length ?? 0;
      if (raw < limit || entries.length < raw) exhausted.add(o.deviceId);
      for (const e of entries) merged.push({ deviceId: o.deviceId, ...e });
    }
    // Timestamps are RFC 3339 in UTC with microseconds, all of one length: text order is time order.
    merged.sort((a, b) =>
      a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : a.deviceId < b.deviceId ? -1 : 1,
    );
    const page = merged.slice(0, limit);
    const next: Record<string, string> = {};
    for (const t of targets) next[t.id] = position(t.id);
    for (const e of page) next[e.deviceId] = e.timestamp;
    const left = merged.length > page.length;
    const more = left || outcomes.some((o) => o.status === 'ok' && !exhausted.has(o.deviceId));
    return {
      entries: page.map((e) => ({
        deviceId: e.deviceId,
        timestamp: e.timestamp,
        level: e.level,
        component: e.component,
        message: e.message,
        fields: e.fields ?? {},
      })),
      count: page.length,
      cursor: more ? writeCursor({ v: 1, f: hash, p: next }) : null,
      devices: outcomes.map(deviceAnswer),
      unavailable: outcomes.flatMap(unavailable),
    };
  }

  async hits(principal: Principal, body: HitsBody) {
    const targets = await this.#targets(principal, body);
    const q = this.#window(body);
    q.set('bucket', String(body.bucketSeconds ?? 60));
    const outcomes = await this.#ask(principal, targets, () => `/logs/hits?${q.toString()}`, body.deadlineMs);
    const total = new Map<string, Record<string, number>>();
    const devices = outcomes.map((o) => {
      if (o.status !== 'ok') return { ...deviceAnswer(o), buckets: [] };
      const buckets = (o.body as { buckets: { start: string; counts: Record<string, number> }[] }).buckets;
      for (const b of buckets) {
        const sum = total.get(b.start) ?? {};
        for (const [level, n] of Object.entries(b.counts)) sum[level] = (sum[level] ?? 0) + n;
        total.set(b.start, sum);
      }
      return { deviceId: o.deviceId, status: o.status, buckets };
    });
    return {
      from: q.get('from'),
      to: q.get('to'),
      bucketSeconds: body.bucketSeconds ?? 60,
      buckets: [...total.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([start, counts]) => ({ start, counts })),
      devices,
      unavailable: outcomes.flatMap(unavailable),
    };
  }

  async statistics(principal: Principal, body: StatisticsBody) {
    const targets = await this.#targets(principal, body);
    const q = this.#window(body);
    const outcomes = await this.#ask(
      principal,
      targets,
      () => `/logs/statistics?${q.toString()}`,
      body.deadlineMs,
    );
    let count = 0;
    const byLevel: Record<string, number> = {};
    const components = new Map<string, number>();
    const devices = outcomes.map((o) => {
      if (o.status !== 'ok') return deviceAnswer(o);
      const s = o.body as {
        count: number;
        oldest: string | null;
        newest: string | null;
        byLevel: Record<string, number>;
        components: { component: string; n: number }[];
      };
      count += s.count;
      for (const [l, n] of Object.entries(s.byLevel)) byLevel[l] = (byLevel[l] ?? 0) + n;
      for (const c of s.components) components.set(c.component, (components.get(c.component) ?? 0) + c.n);
      return {
        deviceId: o.deviceId,
        status: o.status,
        count: s.count,
        oldest: s.oldest,
        newest: s.newest,
        byLevel: s.byLevel,
      };
    });
    return {
      from: q.get('from'),
      to: q.get('to'),
      count,
      byLevel,
      components: [...components.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 50)
        .map(([component, n]) => ({ component, n })),
      devices,
      unavailable: outcomes.flatMap(unavailable),
    };
  }

  /** The filters and a fixed window (default: the hour before now), the same for every edge. */
  #window(t: Targets): URLSearchParams {
    const q = this.#filters(t);
    const to = t.to === undefined ? Date.now() * 1000 : parseLogTime(t.to)!;
    const from = t.from === undefined ? to - 3600 * 1_000_000 : parseLogTime(t.from)!;
    q.set('from', formatLogTime(from));
    q.set('to', formatLogTime(to));
    return q;
  }

  /** The device, when the caller may read it (404 otherwise). */
  device(principal: Principal, deviceId: string) {
    return this.fleet.device(principal, deviceId);
  }

  /** A call to one device's log forwarding (`/dm/v2/log-forwarding/<what>`), the edge's answer relayed. */
  async forwarding(
    principal: Principal,
    deviceId: string,
    what: 'status' | 'start' | 'stop',
    requestId: string,
  ) {
    const d = await this.fleet.device(principal, deviceId);
    const actor = principalActor(principal, d, requestId);
    const r = await this.bridge.json(
      d.id,
      what === 'status' ? 'GET' : 'POST',
      `/dm/v2/log-forwarding/${what}`,
      what === 'status' ? undefined : {},
      {},
      actor,
    );
    if (r.status === 200) return r.body as unknown;
    const b = r.body as { code?: string; message?: string } | undefined;
    throw AppError.relayed(
      r.status,
      b?.code,
      ERRORS.edgeError,
      `the edge answered: ${b?.message ?? r.status}`,
    );
  }
}

function writeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function readCursor(text: string, hash: string): Cursor {
  let c: Cursor;
  try {
    c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Cursor;
  } catch {
    throw badRequest('cursor is not a cursor of /api/v1/edge-logs/query');
  }
  if (!c || c.v !== 1 || typeof c.p !== 'object' || c.p === null)
    throw badRequest('cursor is not a cursor of /api/v1/edge-logs/query');
  if (c.f !== hash) throw badRequest('cursor belongs to a query with other filters, time range or limit');
  for (const v of Object.values(c.p))
    if (typeof v !== 'string' || parseLogTime(v) === undefined)
      throw badRequest('cursor holds a bad position');
  return c;
}
