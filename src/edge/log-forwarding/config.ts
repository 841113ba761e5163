/**
 * The log forwarding configuration: one target (syslog over UDP, TCP or TLS, or HTTP with JSON
 * lines), filters by level and component, and whether it runs. Its rules (what a valid one is),
 * its defaults, and its secrets (the TLS private key and the HTTP header values), which reads show
 * as `SECRET_MASK` and which an update that sends the mask back keeps.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { isIP } from 'node:net';
import { LOG_LEVEL_NAMES, type LogLevelName } from '../../kernel/logging/log-store.js';
import type { SectionIssue } from '../../kernel/service/index.js';

export interface TlsSettings {
  /** PEM of the certificate authorities that sign the receiver's certificate (default: the system's). */
  ca?: string;
  /** PEM client certificate, for receivers that authenticate senders (with `key`). */
  cert?: string;
  /** PEM private key of `cert`: a secret. */
  key?: string;
  /** The name the receiver's certificate must carry (default: `host`). */
  serverName?: string;
  /** Accept any certificate (tests only: the connection can be intercepted). */
  insecureSkipVerify?: boolean;
}

export interface SyslogTarget {
  type: 'syslog';
  /** `udp` (RFC 5426), `tcp` with octet counting (RFC 6587), `tls` (RFC 5425). */
  protocol: 'udp' | 'tcp' | 'tls';
  host: string;
  port: number;
  /** Syslog facility name (default `local0`). */
  facility?: string;
  /** APP-NAME of every message (default `millwright`). */
  appName?: string;
  /** HOSTNAME of every message (default the machine's name). */
  hostname?: string;
  /** Longest message in bytes, frame header included (default 8192, rsyslog's default). */
  maxMessageBytes?: number;
  tls?: TlsSettings;
}

export interface HttpTarget {
  type: 'http';
  /** `http://` or `https://` address that takes POSTed JSON lines. */
  url: string;
  /** Extra request headers (`authorization`...): their values are secrets. */
  headers?: Record<string, string>;
  /** Entries per request (default 500). */
  batchSize?: number;
  tls?: TlsSettings;
}

export type ForwardingTarget = SyslogTarget | HttpTarget;

export interface ForwardingFilters {
  /** Lowest level forwarded (default `info`). */
  level: LogLevelName;
  /** Components forwarded: exact names, or prefixes ending in `*` (`edge.*`); empty: all. */
  components: string[];
}

export interface ForwardingConfig {
  enabled: boolean;
  target: ForwardingTarget | null;
  filters: ForwardingFilters;
}

export const DEFAULT_CONFIG: ForwardingConfig = {
  enabled: false,
  target: null,
  filters: { level: 'info', components: [] },
};

/** What reads show instead of a secret; sending it back on update keeps the secret. */
export const SECRET_MASK = '********';

export const FACILITIES = [
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'ntp',
  'audit',
  'alert',
  'clock',
  'local0',
  'local1',
  'local2',
  'local3',
  'local4',
  'local5',
  'local6',
  'local7',
] as const;

export const MAX_COMPONENT_FILTERS = 100;

/** Problems of `config` (already of the right JSON shape), each naming its field. */
export function configIssues(config: ForwardingConfig): SectionIssue[] {
  const issues: SectionIssue[] = [];
  const add = (path: string, message: string) => issues.push({ path, message });
  if (config.enabled && !config.target) add('enabled', 'forwarding cannot be enabled without a target');
  if (!LOG_LEVEL_NAMES.includes(config.filters.level))
    add('filters.level', `must be one of ${LOG_LEVEL_NAMES.join(', ')}`);
  if (config.filters.components.length > MAX_COMPONENT_FILTERS)
    add('filters.components', `at most ${MAX_COMPONENT_FILTERS} components`);
  for (const [i, c] of config.filters.components.entries())
    if (c === '' || c.includes(' ') || (c.indexOf('*') !== -1 && c.indexOf('*') !== c.length - 1))
      add(`filters.components[${i}]`, 'a component name, or a prefix ending in "*" (edge.*)');
  const t = config.target;
  if (!t) return issues;
  if (t.type === 'syslog') {
    if (!t.host || /\s/.test(t.host)) add('target.host', 'a host name or an IP address');
    if (!Number.isInteger(t.port) || t.port < 1 || t.port > 65535)
      add('target.port', 'a port from 1 to 65535');
    if (!['udp', 'tcp', 'tls'].includes(t.protocol)) add('target.protocol', 'one of udp, tcp, tls');
    if (t.facility !== undefined && !(FACILITIES as readonly string[]).includes(t.facility))
      add('target.facility', `one of ${FACILITIES.join(', ')}`);
    if (t.appName !== undefined && !/^[!-~]{1,48}$/.test(t.appName))
      add('target.appName', '1 to 48 printable ASCII characters, no space (RFC 5424 APP-NAME)');
    if (t.hostname !== undefined && !/^[!-~]{1,255}$/.test(t.hostname))
      add('target.hostname', '1 to 255 printable ASCII characters, no space (RFC 5424 HOSTNAME)');
    if (t.tls && t.protocol !== 'tls') add('target.tls', 'only with protocol "tls"');
  } else if (t.type === 'http') {
    let url: URL | undefined;
    try {
      url = new URL(t.url);
    } catch {
      add('target.url', 'an http:// or https:// URL');
    }
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:')
      add('target.url', 'an http:// or https:// URL');
    if (url && t.tls && url.protocol !== 'https:') add('target.tls', 'only with an https:// URL');
    for (const name of Object.keys(t.headers ?? {}))
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) add(`target.headers.${name}`, 'not a header name');
  } else {
    add('target.type', 'one of syslog, http');
  }
  if (t.tls) tlsIssues(t.tls, add);
  return issues;
}

function tlsIssues(tls: TlsSettings, add: (path: string, message: string) => void): void {
  if (tls.ca !== undefined)
    try {
      new X509Certificate(tls.ca);
    } catch {
      add('target.tls.ca', 'not a PEM certificate');
    }
  if (tls.cert !== undefined)
    try {
      new X509Certificate(tls.cert);
    } catch {
      add('target.tls.cert', 'not a PEM certificate');
    }
  if (tls.key !== undefined)
    try {
      createPrivateKey(tls.key);
    } catch {
      add('target.tls.key', 'not a PEM private key');
    }
  if ((tls.cert === undefined) !== (tls.key === undefined))
    add('target.tls', 'cert and key go together (a client certificate needs its key)');
  if (tls.serverName !== undefined && (tls.serverName === '' || isIP(tls.serverName) !== 0))
    add('target.tls.serverName', 'a DNS name (an IP address is checked against the certificate from host)');
}

/** `config` with its secrets replaced by `SECRET_MASK`, for reads. */
export function masked(config: ForwardingConfig): ForwardingConfig {
  return mapSecrets(config, () => SECRET_MASK);
}

/** `next` with every secret sent as `SECRET_MASK` taken from `previous` (dropped if it has none). */
export function keepSecrets(
  next: ForwardingConfig,
  previous: ForwardingConfig | undefined,
): ForwardingConfig {
  const old = previous?.target;
  return mapSecrets(next, (value, where) => {
    if (value !== SECRET_MASK) return value;
    if (where.header !== undefined) return old?.type === 'http' ? old.headers?.[where.header] : undefined;
    return old?.tls?.key;
  });
}

/** `config` with each secret through `fn` (`undefined` leaves it out). */
export function mapSecrets(
  config: ForwardingConfig,
  fn: (value: string, where: { header?: string }) => string | undefined,
): ForwardingConfig {
  const t = config.target;
  if (!t) return config;
  const target: ForwardingTarget = { ...t };
  if (t.tls?.key !== undefined) {
    const { key, ...rest } = t.tls;
    const v = fn(key, {});
    target.tls = v === undefined ? rest : { ...rest, key: v };
  }
  if (t.type === 'http' && t.headers && target.type === 'http') {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(t.headers)) {
      const v = fn(value, { header: name });
      if (v !== undefined) headers[name] = v;
    }
    target.headers = headers;
  }
  return { ...config, target };
}

/** Whether an entry of `component` at `level` passes the filters. */
export function passes(filters: ForwardingFilters, component: string): boolean {
  if (filters.components.length === 0) return true;
  return filters.components.some((c) =>
    c.endsWith('*') ? component.startsWith(c.slice(0, -1)) : c === component,
  );
}

/** A short description of the target for status and logs (no secrets). */
export function describeTarget(t: ForwardingTarget | null): string | null {
  if (!t) return null;
  if (t.type === 'http') {
    const u = new URL(t.url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  }
  return `syslog+${t.protocol}://${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
}
