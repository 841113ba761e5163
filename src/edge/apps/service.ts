/**
 * Applications on the container engine: containers, networks and images as the engine has them,
 * and applications, the containers grouped by their application label. No state of its own: the
 * engine is the record (registries and the dashboard's history are kept apart).
 */
import { AppError, ERRORS, badRequest, conflict } from '../../kernel/errors.js';
import type { EngineClient } from './engine.js';
import { engineMessage } from './engine.js';
import {
  APPLICATION_LABELS,
  toContainerDetail,
  toContainerSummary,
  toImageSummary,
  toNetworkSummary,
  type ContainerDetail,
  type ContainerSummary,
  type ImageSummary,
  type NetworkSummary,
} from './shapes.js';

export interface Application {
  name: string;
  /** The label that groups it (`millwright.application`, `com.docker.compose.project`), or null for a lone container. */
  label: string | null;
  /** `running` (all), `partial` (some), `stopped` (none). */
  state: 'running' | 'partial' | 'stopped';
  running: number;
  total: number;
  containers: { id: string; name: string; state: string }[];
}

export interface CreateContainer {
  name?: string;
  image: string;
  command?: string[];
  env?: Record<string, string>;
  labels?: Record<string, string>;
  application?: string;
  ports?: { containerPort: number; hostPort?: number; protocol?: 'tcp' | 'udp'; hostIp?: string }[];
  network?: string;
  restartPolicy?: 'no' | 'always' | 'unless-stopped' | 'on-failure';
  start?: boolean;
}

export interface CreateNetwork {
  name: string;
  driver?: string;
  internal?: boolean;
  subnet?: string;
  gateway?: string;
  labels?: Record<string, string>;
}

/** Credentials for a pull, from a registry (`registries.ts`). */
export interface PullAuth {
  username: string;
  password: string;
  serveraddress: string;
}

const enc = encodeURIComponent;

export class AppsService {
  constructor(
    readonly engine: EngineClient,
    private readonly maxItems: number,
  ) {}

  async containers(): Promise<ContainerSummary[]> {
    const raw = await this.engine.call<unknown[]>({ path: '/containers/json', query: { all: true } });
    return this.bounded(raw, 'containers').map(toContainerSummary);
  }

  async container(id: string): Promise<ContainerDetail> {
    return toContainerDetail(await this.engine.call({ path: `/containers/${enc(id)}/json` }));
  }

  async createContainer(c: CreateContainer): Promise<ContainerDetail> {
    // Docker answers a taken name with 409, Podman with 500: ask first, so both give a conflict.
    if (c.name && (await this.engine.raw({ path: `/containers/${enc(c.name)}/json` })).status === 200) {
      throw conflict(`a container named "${c.name}" exists`);
    }
    const labels = { ...c.labels, ...(c.application ? { [APPLICATION_LABELS[0]]: c.application } : {}) };
    const exposed: Record<string, object> = {};
    const bindings: Record<string, { HostPort?: string; HostIp?: string }[]> = {};
    for (const p of c.ports ?? []) {
      const key = `${p.containerPort}/${p.protocol ?? 'tcp'}`;
      exposed[key] = {};
      if (p.hostPort !== undefined) {
        (bindings[key] ??= []).push({
          HostPort: String(p.hostPort),
          ...(p.hostIp ? { HostIp: p.hostIp } : {}),
        });
      }
    }
    const created = await this.engine.call<{ Id: string }>({
      method: 'POST',
      path: '/containers/create',
      query: { name: c.name },
      body: {
        Image: c.image,
        ...(c.command ? { Cmd: c.command } : {}),
        Env: Object.entries(c.env ?? {}).map(([k, v]) => `${k}=${v}`),
        Labels: labels,
        ExposedPorts: exposed,
        HostConfig: {
          PortBindings: bindings,
          RestartPolicy: { Name: c.restartPolicy ?? 'no' },
          ...(c.network ? { NetworkMode: c.network } : {}),
        },
      },
    });
    if (c.start) await this.startContainer(created.Id);
    return this.container(created.Id);
  }

  /** Starts a container; one already running is left as it is (the engine's 304). */
  async startContainer(id: string): Promise<ContainerDetail> {
    await this.engine.call({ method: 'POST', path: `/containers/${enc(id)}/start` }, [304]);
    return this.container(id);
  }

  async stopContainer(id: string, timeoutSeconds?: number): Promise<ContainerDetail> {
    await this.engine.call(
      { method: 'POST', path: `/containers/${enc(id)}/stop`, query: { t: timeoutSeconds } },
      [304],
    );
    return this.container(id);
  }

  async restartContainer(id: string): Promise<ContainerDetail> {
    await this.engine.call({ method: 'POST', path: `/containers/${enc(id)}/restart` });
    return this.container(id);
  }

  async removeContainer(id: string, force: boolean): Promise<void> {
    await this.engine.call({ method: 'DELETE', path: `/containers/${enc(id)}`, query: { force } });
  }

  /** Containers grouped by their application label; a container without one is its own application. */
  async applications(): Promise<Application[]> {
    const groups = new Map<string, Application>();
    for (const c of await this.containers()) {
      const label = APPLICATION_LABELS.find((l) => c.labels[l]) ?? null;
      const name = c.application ?? c.name;
      const key = `${label ?? ''}\u0000${name}`;
      let app = groups.get(key);
      if (!app) {
        app = { name, label, state: 'stopped', running: 0, total: 0, containers: [] };
        groups.set(key, app);
      }
      app.containers.push({ id: c.id, name: c.name, state: c.state });
      app.total++;
      if (c.state === 'running') app.running++;
    }
    for (const app of groups.values()) {
      app.state = app.running === 0 ? 'stopped' : app.running === app.total ? 'running' : 'partial';
    }
    return [...groups.values()];
  }

  async networks(): Promise<NetworkSummary[]> {
    const raw = await this.engine.call<unknown[]>({ path: '/networks' });
    return this.bounded(raw, 'networks').map(toNetworkSummary);
  }

  async network(id: string): Promise<NetworkSummary> {
    return toNetworkSummary(await this.engine.call({ path: `/networks/${enc(id)}` }));
  }

  async createNetwork(n: CreateNetwork): Promise<NetworkSummary> {
    if (n.gateway && !n.subnet) throw badRequest('gateway needs a subnet');
    const created = await this.engine.call<{ Id: string }>({
      method: 'POST',
      path: '/networks/create',
      body: {
        Name: n.name,
        Driver: n.driver ?? 'bridge',
        Internal: n.internal ?? false,
        Labels: n.labels ?? {},
        ...(n.subnet
          ? { IPAM: { Config: [{ Subnet: n.subnet, ...(n.gateway ? { Gateway: n.gateway } : {}) }] } }
          : {}),
      },
    });
    return this.network(created.Id);
  }

  async removeNetwork(id: string): Promise<void> {
    await this.engine.call({ method: 'DELETE', path: `/networks/${enc(id)}` });
  }

  async images(): Promise<ImageSummary[]> {
    const raw = await this.engine.call<unknown[]>({ path: '/images/json' });
    return this.bounded(raw, 'images').map(toImageSummary);
  }

  async image(id: string): Promise<ImageSummary> {
    const raw = await this.engine.call<Record<string, unknown>>({ path: `/images/${enc(id)}/json` });
    return toImageSummary(raw);
  }

  async removeImage(id: string, force: boolean): Promise<void> {
    await this.engine.call({ method: 'DELETE', path: `/images/${enc(id)}`, query: { force } });
  }

  /**
   * Pulls `image` (`name[:tag]` or `name@digest`) with a registry's credentials. The engine answers
   * 200 and streams progress; a failure comes as an `error` line of that stream, passed on.
   */
  async pullImage(image: string, auth: PullAuth | null, timeoutMs: number): Promise<ImageSummary> {
    const reply = await this.engine.raw({
      method: 'POST',
      path: '/images/create',
      query: { fromImage: image },
      headers: auth ? { 'x-registry-auth': Buffer.from(JSON.stringify(auth)).toString('base64url') } : {},
      timeoutMs,
    });
    const lines = Array.isArray(reply.body) ? reply.body : [reply.body];
    const failed = lines.find((l) => l && typeof l === 'object' && 'error' in l && l.error);
    if (reply.status >= 300 || failed) {
      const reason = failed
        ? engineMessage({ message: (failed as { error: unknown }).error })
        : engineMessage(reply.body);
      throw new AppError(ERRORS.engineError, `the container engine could not pull ${image}: ${reason}`, {
        details: { engineStatus: reply.status, engineMessage: reason },
      });
    }
    return this.image(image);
  }

  private bounded(raw: unknown[], what: string): unknown[] {
    if (!Array.isArray(raw))
      throw new AppError(ERRORS.engineError, `the engine's list of ${what} is not a list`);
    return raw.slice(0, this.maxItems);
  }
}
