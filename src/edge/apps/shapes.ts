/**
 * The engine's records (Docker Engine API, as Docker and Podman answer them) in this API's shapes:
 * camelCase, times as RFC 3339, labels as a map, and the application a container belongs to.
 */

/** Labels that name a container's application, the first present wins. */
export const APPLICATION_LABELS = ['millwright.application', 'com.docker.compose.project'] as const;

export interface ContainerPort {
  privatePort: number;
  publicPort: number | null;
  type: string;
  ip: string | null;
}

export interface ContainerSummary {
  id: string;
  name: string;
  image: string;
  imageId: string;
  command: string;
  state: string;
  status: string;
  created: string;
  application: string | null;
  labels: Record<string, string>;
  ports: ContainerPort[];
  networks: string[];
}

export interface ContainerDetail extends ContainerSummary {
  running: boolean;
  startedAt: string | null;
  finishedAt: string | null;
  exitCode: number | null;
  error: string | null;
  restartCount: number;
  restartPolicy: string;
  /** The names of the environment variables (their values may be secrets and are not shown). */
  envNames: string[];
  mounts: { source: string; destination: string; mode: string; readOnly: boolean }[];
}

export interface NetworkSummary {
  id: string;
  name: string;
  driver: string;
  scope: string;
  internal: boolean;
  subnets: string[];
  gateways: string[];
  containers: number;
  created: string | null;
  labels: Record<string, string>;
}

export interface ImageSummary {
  id: string;
  tags: string[];
  digests: string[];
  size: number;
  created: string | null;
  containers: number | null;
  labels: Record<string, string>;
}

type J = Record<string, unknown>;
const obj = (v: unknown): J => (v && typeof v === 'object' ? (v as J) : {});
const str = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.map(str) : []);
const labelsOf = (v: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries(obj(v)).map(([k, x]) => [k, str(x)]));

/** Seconds since the epoch, or an RFC 3339 text, as RFC 3339 (null when absent or zero). */
export function isoTime(v: unknown): string | null {
  if (typeof v === 'number') return v > 0 ? new Date(v * 1000).toISOString() : null;
  if (typeof v === 'string' && v !== '' && !v.startsWith('0001-01-01')) {
    const t = Date.parse(v);
    return Number.isNaN(t) ? v : new Date(t).toISOString();
  }
  return null;
}

export function applicationOf(labels: Record<string, string>): string | null {
  for (const l of APPLICATION_LABELS) if (labels[l]) return labels[l];
  return null;
}

export function toContainerSummary(raw: unknown): ContainerSummary {
  const c = obj(raw);
  const labels = labelsOf(c.Labels);
  const name = strs(c.Names)[0] ?? '';
  return {
    id: str(c.Id),
    name: name.replace(/^\//, ''),
    image: str(c.Image),
    imageId: str(c.ImageID),
    command: str(c.Command),
    state: str(c.State),
    status: str(c.Status),
    created: isoTime(c.Created) ?? '',
    application: applicationOf(labels),
    labels,
    ports: (Array.isArray(c.Ports) ? c.Ports : []).map((p) => {
      const o = obj(p);
      return {
        privatePort: Number(o.PrivatePort ?? 0),
        publicPort: typeof o.PublicPort === 'number' ? o.PublicPort : null,
        type: str(o.Type) || 'tcp',
        ip: o.IP ? str(o.IP) : null,
      };
    }),
    networks: Object.keys(obj(obj(c.NetworkSettings).Networks)),
  };
}

export function toContainerDetail(raw: unknown): ContainerDetail {
  const c = obj(raw);
  const config = obj(c.Config);
  const state = obj(c.State);
  const host = obj(c.HostConfig);
  const labels = labelsOf(config.Labels);
  const ports: ContainerPort[] = [];
  for (const [key, binds] of Object.entries(obj(obj(c.NetworkSettings).Ports))) {
    const [port = '0', type = 'tcp'] = key.split('/');
    const list = Array.isArray(binds) && binds.length > 0 ? binds : [null];
    for (const b of list) {
      const o = obj(b);
      ports.push({
        privatePort: Number(port),
        publicPort: o.HostPort ? Number(o.HostPort) : null,
        type,
        ip: o.HostIp ? str(o.HostIp) : null,
      });
    }
  }
  const cmd = [...strs(config.Entrypoint), ...strs(config.Cmd)];
  return {
    id: str(c.Id),
    name: str(c.Name).replace(/^\//, ''),
    image: str(config.Image) || str(c.ImageName),
    imageId: str(c.Image),
    command: cmd.join(' '),
    state: str(state.Status),
    status: str(state.Status),
    created: isoTime(c.Created) ?? '',
    application: applicationOf(labels),
    labels,
    ports,
    networks: Object.keys(obj(obj(c.NetworkSettings).Networks)),
    running: state.Running === true,
    startedAt: isoTime(state.StartedAt),
    finishedAt: isoTime(state.FinishedAt),
    exitCode: typeof state.ExitCode === 'number' ? state.ExitCode : null,
    error: state.Error ? str(state.Error) : null,
    restartCount: Number(c.RestartCount ?? 0),
    restartPolicy: str(obj(host.RestartPolicy).Name) || 'no',
    envNames: strs(config.Env).map((e) => e.split('=')[0] ?? ''),
    mounts: (Array.isArray(c.Mounts) ? c.Mounts : []).map((m) => {
      const o = obj(m);
      return {
        source: str(o.Source),
        destination: str(o.Destination),
        mode: str(o.Mode),
        readOnly: o.RW === false,
      };
    }),
  };
}

export function toNetworkSummary(raw: unknown): NetworkSummary {
  const n = obj(raw);
  const configs = (Array.isArray(obj(n.IPAM).Config) ? (obj(n.IPAM).Config as unknown[]) : []).map(obj);
  return {
    id: str(n.Id),
    name: str(n.Name),
    driver: str(n.Driver),
    scope: str(n.Scope) || 'local',
    internal: n.Internal === true,
    subnets: configs.map((c) => str(c.Subnet)).filter(Boolean),
    gateways: configs.map((c) => str(c.Gateway)).filter(Boolean),
    containers: Object.keys(obj(n.Containers)).length,
    created: isoTime(n.Created),
    labels: labelsOf(n.Labels),
  };
}

export function toImageSummary(raw: unknown): ImageSummary {
  const i = obj(raw);
  const tags = strs(i.RepoTags).filter((t) => t !== '<none>:<none>');
  return {
    id: str(i.Id),
    tags,
    digests: strs(i.RepoDigests),
    size: Number(i.Size ?? 0),
    created: isoTime(i.Created),
    containers: typeof i.Containers === 'number' && i.Containers >= 0 ? i.Containers : null,
    labels: labelsOf(i.Labels),
  };
}
