/**
 * The application overview (`/apps/overview/dashboard`): CPU and memory of every running container
 * from the engine's stats, with a bounded history per container. Sampling runs only while the
 * dashboard is being read: the first read starts it (and waits for one sample), and it stops once
 * nobody read it for as long as the history it keeps.
 */
import type { Logger } from 'pino';
import { badRequest } from '../../kernel/errors.js';
import type { AppsService } from './service.js';
import type { ContainerSummary } from './shapes.js';

export interface Sample {
  time: string;
  cpuPercent: number | null;
  memoryBytes: number | null;
}

interface Track {
  name: string;
  application: string | null;
  state: string;
  /** A ring of samples: `capacity` at most, oldest overwritten. */
  ring: (Sample & { at: number })[];
  next: number;
  prev: { total: number; system: number } | null;
  memoryLimitBytes: number | null;
}

export interface DashboardContainer {
  id: string;
  name: string;
  application: string | null;
  state: string;
  cpuPercent: number | null;
  memoryBytes: number | null;
  memoryLimitBytes: number | null;
  memoryPercent: number | null;
  history: Sample[];
}

export interface Dashboard {
  cpuHistorySeconds: number;
  sampleIntervalSeconds: number;
  sampledAt: string | null;
  socket: string;
  totals: {
    applications: number;
    containers: number;
    running: number;
    cpuPercent: number;
    memoryBytes: number;
  };
  applications: {
    name: string;
    state: string;
    running: number;
    total: number;
    cpuPercent: number;
    memoryBytes: number;
  }[];
  containers: DashboardContainer[];
}

type J = Record<string, unknown>;
const obj = (v: unknown): J => (v && typeof v === 'object' ? (v as J) : {});
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
/** How many containers are sampled at once. */
const SAMPLE_CONCURRENCY = 4;

export class StatsSampler {
  readonly #tracks = new Map<string, Track>();
  readonly #capacity: number;
  #timer: NodeJS.Timeout | null = null;
  #lastRead = 0;
  #sampledAt: number | null = null;
  #sampling: Promise<void> | null = null;
  /** Why the last sample failed (the engine went away): answered instead of stale figures. */
  #failure: unknown = null;

  constructor(
    private readonly apps: AppsService,
    private readonly options: { intervalSeconds: number; historySeconds: number; maxContainers: number },
    private readonly logger: Logger,
  ) {
    this.#capacity = Math.ceil(options.historySeconds / options.intervalSeconds) + 1;
  }

  /** `cpuHistorySeconds` of a query string: an integer from 0 to the history kept (default 300 or less). */
  parseHistorySeconds(raw: unknown): number {
    const max = this.options.historySeconds;
    if (raw === undefined || raw === '') return Math.min(300, max);
    const text = Array.isArray(raw) ? undefined : String(raw);
    const n = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
    if (!(n >= 0 && n <= max)) {
      throw badRequest(
        `cpuHistorySeconds must be an integer from 0 to ${max} (--apps-stats-history), got ${JSON.stringify(raw)}`,
      );
    }
    return n;
  }

  async dashboard(historySeconds: number): Promise<Dashboard> {
    this.#lastRead = Date.now();
    if (!this.#timer) {
      await this.sampleOnce();
      this.#failure = null;
      this.#timer = setInterval(() => void this.tick(), this.options.intervalSeconds * 1000);
      this.#timer.unref();
    }
    if (this.#failure) throw this.#failure;
    const since = Date.now() - historySeconds * 1000;
    const containers: DashboardContainer[] = [];
    for (const [id, t] of this.#tracks) {
      const history = this.ordered(t).filter((s) => s.at >= since);
      const last = history.at(-1);
      const running = t.state === 'running';
      const memoryBytes = running ? (last?.memoryBytes ?? null) : null;
      containers.push({
        id,
        name: t.name,
        application: t.application,
        state: t.state,
        cpuPercent: running ? (last?.cpuPercent ?? null) : null,
        memoryBytes,
        memoryLimitBytes: t.memoryLimitBytes,
        memoryPercent:
          memoryBytes !== null && t.memoryLimitBytes ? round((memoryBytes / t.memoryLimitBytes) * 100) : null,
        history: history.map(({ time, cpuPercent, memoryBytes: m }) => ({
          time,
          cpuPercent,
          memoryBytes: m,
        })),
      });
    }
    const apps = new Map<string, Dashboard['applications'][number]>();
    for (const c of containers) {
      const name = c.application ?? c.name;
      const a = apps.get(name) ?? {
        name,
        state: 'stopped',
        running: 0,
        total: 0,
        cpuPercent: 0,
        memoryBytes: 0,
      };
      a.total++;
      if (c.state === 'running') a.running++;
      a.cpuPercent = round(a.cpuPercent + (c.cpuPercent ?? 0));
      a.memoryBytes += c.memoryBytes ?? 0;
      a.state = a.running === 0 ? 'stopped' : a.running === a.total ? 'running' : 'partial';
      apps.set(name, a);
    }
    return {
      cpuHistorySeconds: historySeconds,
      sampleIntervalSeconds: this.options.intervalSeconds,
      sampledAt: this.#sampledAt === null ? null : new Date(this.#sampledAt).toISOString(),
      socket: this.apps.engine.socket,
      totals: {
        applications: apps.size,
        containers: containers.length,
        running: containers.filter((c) => c.state === 'running').length,
        cpuPercent: round(containers.reduce((s, c) => s + (c.cpuPercent ?? 0), 0)),
        memoryBytes: containers.reduce((s, c) => s + (c.memoryBytes ?? 0), 0),
      },
      applications: [...apps.values()],
      containers,
    };
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  private async tick(): Promise<void> {
    if (Date.now() - this.#lastRead > this.options.historySeconds * 1000) {
      // Nobody reads the dashboard: stop sampling, forget the history.
      this.close();
      this.#tracks.clear();
      return;
    }
    try {
      await this.sampleOnce();
      this.#failure = null;
    } catch (err) {
      this.#failure = err;
      this.logger.debug({ err }, 'dashboard sample failed');
    }
  }

  /** One sample of every container (one at a time per call: a slow engine does not pile them up). */
  sampleOnce(): Promise<void> {
    this.#sampling ??= this.sample().finally(() => (this.#sampling = null));
    return this.#sampling;
  }

  private async sample(): Promise<void> {
    const list = (await this.apps.containers()).slice(0, this.options.maxContainers);
    const seen = new Set(list.map((c) => c.id));
    for (const id of this.#tracks.keys()) if (!seen.has(id)) this.#tracks.delete(id);
    const queue = [...list];
    const worker = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) await this.sampleContainer(c);
    };
    await Promise.all(Array.from({ length: SAMPLE_CONCURRENCY }, worker));
    this.#sampledAt = Date.now();
  }

  private async sampleContainer(c: ContainerSummary): Promise<void> {
    let t = this.#tracks.get(c.id);
    if (!t) {
      t = {
        name: c.name,
        application: c.application,
        state: c.state,
        ring: [],
        next: 0,
        prev: null,
        memoryLimitBytes: null,
      };
      this.#tracks.set(c.id, t);
    }
    t.state = c.state;
    if (c.state !== 'running') {
      t.prev = null;
      return;
    }
    let stats: J;
    try {
      stats = obj(
        await this.apps.engine.call({
          path: `/containers/${encodeURIComponent(c.id)}/stats`,
          query: { stream: false, 'one-shot': true },
        }),
      );
    } catch (err) {
      this.logger.debug({ err, container: c.name }, 'stats of a container failed');
      return;
    }
    const { cpuPercent, sample } = cpuOf(stats, t.prev);
    t.prev = sample;
    const mem = obj(stats.memory_stats);
    const usage = num(mem.usage);
    const cache = num(obj(mem.stats).inactive_file) ?? num(obj(mem.stats).cache) ?? 0;
    t.memoryLimitBytes = num(mem.limit);
    const now = Date.now();
    const s = {
      at: now,
      time: new Date(now).toISOString(),
      cpuPercent,
      memoryBytes: usage === null ? null : Math.max(0, usage - cache),
    };
    if (t.ring.length < this.#capacity) t.ring.push(s);
    else t.ring[t.next] = s;
    t.next = (t.next + 1) % this.#capacity;
  }

  private ordered(t: Track): (Sample & { at: number })[] {
    return t.ring.length < this.#capacity
      ? [...t.ring]
      : [...t.ring.slice(t.next), ...t.ring.slice(0, t.next)];
  }
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * CPU of a container from the engine's stats and the previous sample of it, as `docker stats`
 * computes it: the container's share of the host's CPU time between the two samples, times the
 * number of CPUs (100% is one core busy). Null for the first sample, or when a counter went back.
 */
export function cpuOf(
  stats: Record<string, unknown>,
  prev: { total: number; system: number } | null,
): { cpuPercent: number | null; sample: { total: number; system: number } | null } {
  const cpu = obj(stats.cpu_stats);
  const usage = obj(cpu.cpu_usage);
  const total = num(usage.total_usage);
  const system = num(cpu.system_cpu_usage);
  const percpu = Array.isArray(usage.percpu_usage) ? usage.percpu_usage.length : 0;
  const online = num(cpu.online_cpus) ?? (percpu || 1);
  const sample = total !== null && system !== null ? { total, system } : null;
  if (!sample || !prev || sample.system <= prev.system || sample.total < prev.total) {
    return { cpuPercent: null, sample };
  }
  return {
    cpuPercent: round(((sample.total - prev.total) / (sample.system - prev.system)) * online * 100),
    sample,
  };
}
