/**
 * The machine's network as the edge sees it: interfaces (`ip -j -d addr`, or Node's
 * `os.networkInterfaces()` with `/sys/class/net` where `ip` is absent), the kernel's routes
 * (`ip -j -4|-6 route show table all`), deleting a static route (`ip route del`), and the high
 * availability role. Plain code, no HTTP.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { AppError, ERRORS, conflict, notFound } from '../../kernel/errors.js';
import { parseJsonArray, runIp, type IpRun } from './ip.js';

export interface InterfaceAddress {
  family: 'inet' | 'inet6';
  address: string;
  prefixLength: number;
  /** `address/prefixLength`. */
  cidr: string;
  scope: string;
  broadcast: string | null;
}

export interface NetworkInterfaceInfo {
  name: string;
  index: number | null;
  /** Hardware address, lower case; null when the link has none. */
  mac: string | null;
  mtu: number | null;
  /** The kernel's operational state, lower case: `up`, `down`, `unknown`, `dormant`... */
  state: string;
  /** Link flags (`UP`, `LOWER_UP`, `LOOPBACK`...). */
  flags: string[];
  /** The link's kind: `loopback`, `ether`, or the driver kind (`bridge`, `veth`, `dummy`...). */
  kind: string;
  bridge: boolean;
  addresses: InterfaceAddress[];
}

export interface Route {
  /** Stable: the same route has the same id in every listing (a hash of what identifies it). */
  id: string;
  family: 'inet' | 'inet6';
  /** `default` or a prefix (`10.0.0.0/24`, `2001:db8::/64`). */
  destination: string;
  gateway: string | null;
  device: string | null;
  metric: number | null;
  table: string;
  /** Who made it: `boot` (by hand, `ip route add`), `static`, `kernel`, `dhcp`, `ra`... */
  protocol: string;
  scope: string | null;
  source: string | null;
  type: string;
  /** Added by an administrator (protocol `boot` or `static`), not by the kernel or a daemon. */
  static: boolean;
}

/** Route types of the kernel's own bookkeeping (the `local` table), never listed. */
const HIDDEN_TYPES = new Set(['local', 'broadcast', 'anycast', 'multicast']);
const STATIC_PROTOCOLS = new Set(['boot', 'static']);

export class NetworkService {
  constructor(private readonly ipCommand = 'ip') {}

  /** The machine's interfaces; bridges only with `showBridges`. */
  async interfaces(showBridges: boolean): Promise<NetworkInterfaceInfo[]> {
    const run = await runIp(['-j', '-d', 'addr', 'show'], this.ipCommand);
    const all = run.missing ? interfacesFromNode() : fromIpAddr(checked(run, 'ip -j -d addr show'));
    return all.filter((i) => showBridges || !i.bridge);
  }

  /** Routes of every table but `local`, IPv4 then IPv6; only static ones unless `all`. */
  async routes(all = false): Promise<Route[]> {
    const out: Route[] = [];
    for (const family of ['inet', 'inet6'] as const) {
      const args = [family === 'inet' ? '-4' : '-6', '-j', 'route', 'show', 'table', 'all'];
      const run = await runIp(args, this.ipCommand);
      if (run.missing) throw ipMissing();
      out.push(...fromIpRoute(family, checked(run, `ip ${args.join(' ')}`)));
    }
    return all ? out : out.filter((r) => r.static);
  }

  /** Deletes the static route `id` with `ip route del`; refuses clearly without CAP_NET_ADMIN. */
  async deleteRoute(id: string): Promise<Route> {
    const route = (await this.routes(true)).find((r) => r.id === id);
    if (!route) throw notFound(`route "${id}" not found (GET /dm/v2/routes lists them)`);
    if (!route.static)
      throw conflict(
        `route "${id}" (${route.destination}) was made by "${route.protocol}", not by an administrator: only static routes are deleted here`,
      );
    const args = routeDelArgs(route);
    const run = await runIp(args, this.ipCommand);
    if (run.missing) throw ipMissing();
    if (run.code !== 0) {
      const said = run.stderr.trim();
      if (/operation not permitted|permission denied/i.test(said))
        throw new AppError(
          ERRORS.privilegeRequired,
          `deleting a route needs the CAP_NET_ADMIN capability, which the edge process does not have ` +
            `(run it as root, or grant it: AmbientCapabilities=CAP_NET_ADMIN in its systemd unit); ` +
            `\`ip ${args.join(' ')}\` answered: ${said}`,
        );
      if (/no such process/i.test(said)) throw notFound(`route "${id}" is gone already`);
      throw conflict(`\`ip ${args.join(' ')}\` failed: ${said || `exit code ${String(run.code)}`}`);
    }
    if ((await this.routes(true)).some((r) => r.id === id))
      throw conflict(`\`ip ${args.join(' ')}\` succeeded but the route is still there`);
    return route;
  }
}

/** The `ip route del` arguments that name exactly `route`. */
export function routeDelArgs(route: Route): string[] {
  const args = [route.family === 'inet' ? '-4' : '-6', 'route', 'del'];
  if (route.type !== 'unicast') args.push(route.type);
  args.push(route.destination);
  if (route.gateway) args.push('via', route.gateway);
  if (route.device) args.push('dev', route.device);
  if (route.metric !== null) args.push('metric', String(route.metric));
  args.push('table', route.table);
  return args;
}

function checked(run: IpRun, what: string): Record<string, unknown>[] {
  if (run.code !== 0) throw new Error(`${what} failed: ${run.stderr.trim()}`);
  return parseJsonArray(run.stdout);
}

function ipMissing(): AppError {
  return new AppError(
    ERRORS.toolUnavailable,
    'the `ip` command is not installed on this machine (Debian package iproute2): routes cannot be read or changed',
  );
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Interfaces from `ip -j -d addr show`. */
export function fromIpAddr(rows: Record<string, unknown>[]): NetworkInterfaceInfo[] {
  return rows.map((row) => {
    const linkinfo = (row.linkinfo ?? {}) as Record<string, unknown>;
    const linkType = str(row.link_type) ?? 'unknown';
    const kind = str(linkinfo.info_kind) ?? linkType;
    const addrInfo = Array.isArray(row.addr_info) ? (row.addr_info as Record<string, unknown>[]) : [];
    return {
      name: String(row.ifname),
      index: num(row.ifindex),
      mac: str(row.address),
      mtu: num(row.mtu),
      state: (str(row.operstate) ?? 'unknown').toLowerCase(),
      flags: Array.isArray(row.flags) ? row.flags.map(String) : [],
      kind,
      bridge: kind === 'bridge',
      addresses: addrInfo
        .filter((a) => a.family === 'inet' || a.family === 'inet6')
        .map((a) => {
          const address = String(a.local);
          const prefixLength = num(a.prefixlen) ?? 0;
          return {
            family: a.family as 'inet' | 'inet6',
            address,
            prefixLength,
            cidr: `${address}/${prefixLength}`,
            scope: str(a.scope) ?? 'global',
            broadcast: str(a.broadcast),
          };
        }),
    };
  });
}

/** Interfaces from Node and `/sys/class/net`, where `ip` is not installed. */
export function interfacesFromNode(): NetworkInterfaceInfo[] {
  const fromNode = networkInterfaces();
  const names = new Set(Object.keys(fromNode));
  const sys = '/sys/class/net';
  if (existsSync(sys)) for (const n of readdirSync(sys)) names.add(n);
  const read = (name: string, file: string) => {
    try {
      return readFileSync(`${sys}/${name}/${file}`, 'utf8').trim();
    } catch {
      return null;
    }
  };
  return [...names].sort().map((name) => {
    const addrs = fromNode[name] ?? [];
    const loopback = addrs.some((a) => a.internal) || name === 'lo';
    const mtu = Number(read(name, 'mtu'));
    const index = Number(read(name, 'ifindex'));
    return {
      name,
      index: Number.isFinite(index) && index > 0 ? index : null,
      mac: read(name, 'address') ?? addrs[0]?.mac ?? null,
      mtu: Number.isFinite(mtu) && mtu > 0 ? mtu : null,
      state: read(name, 'operstate') ?? 'unknown',
      flags: [],
      kind: existsSync(`${sys}/${name}/bridge`) ? 'bridge' : loopback ? 'loopback' : 'ether',
      bridge: existsSync(`${sys}/${name}/bridge`),
      addresses: addrs.map((a) => {
        const prefixLength = Number(a.cidr?.split('/')[1] ?? 0);
        return {
          family: a.family === 'IPv4' ? ('inet' as const) : ('inet6' as const),
          address: a.address,
          prefixLength,
          cidr: `${a.address}/${prefixLength}`,
          scope: a.internal ? 'host' : a.address.startsWith('fe80') ? 'link' : 'global',
          broadcast: null,
        };
      }),
    };
  });
}

/** Routes from `ip -j -4|-6 route show table all`, without the `local` table's bookkeeping. */
export function fromIpRoute(family: 'inet' | 'inet6', rows: Record<string, unknown>[]): Route[] {
  const out: Route[] = [];
  for (const row of rows) {
    const type = str(row.type) ?? 'unicast';
    const table = str(row.table) ?? 'main';
    if (table === 'local' || HIDDEN_TYPES.has(type)) continue;
    const protocol = str(row.protocol) ?? 'boot';
    const route: Omit<Route, 'id'> = {
      family,
      destination: str(row.dst) ?? 'default',
      gateway: str(row.gateway),
      device: str(row.dev),
      metric: num(row.metric),
      table,
      protocol,
      scope: str(row.scope),
      source: str(row.prefsrc),
      type,
      static: STATIC_PROTOCOLS.has(protocol),
    };
    out.push({ id: routeId(route), ...route });
  }
  return out;
}

/** What identifies a route to the kernel (family, table, type, destination, metric, gateway, device). */
export function routeId(r: Omit<Route, 'id'>): string {
  const key = [r.family, r.table, r.type, r.destination, r.metric ?? '', r.gateway ?? '', r.device ?? ''];
  return createHash('sha256').update(key.join('|')).digest('hex').slice(0, 16);
}
