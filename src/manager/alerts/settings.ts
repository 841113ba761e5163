/**
 * Incident settings: where notifications go. The instance's (admin console) hold the SMTP server,
 * the MQTT broker, the rate limit and the instance-wide destinations; a project's hold its own
 * destinations (e-mail recipients, webhooks, an MQTT topic). Secrets (the SMTP and MQTT passwords,
 * each webhook's signing secret) are sealed at rest with the manager's secret box and never
 * answered: a view says only whether one is set. A change that leaves a secret out keeps it.
 */
import { badRequest } from '../../kernel/errors.js';
import type { SecretBox } from '../../kernel/secret-box.js';
import { SEVERITIES, type Severity } from './catalog.js';

export const CHANNELS = ['email', 'webhook', 'mqtt'] as const;
export type Channel = (typeof CHANNELS)[number];

/** Most e-mail recipients and webhooks in one set of destinations. */
export const MAX_RECIPIENTS = 50;
export const MAX_WEBHOOKS = 10;

export interface Destinations {
  enabled: boolean;
  minSeverity: Severity;
  emails: string[];
  webhooks: { url: string; secret: string | null }[];
  mqtt: boolean;
  /** The MQTT topic; null: `<topicPrefix>/<projectId>/<deviceId>/<ruleKey>`. */
  mqttTopic: string | null;
}

export interface SmtpSettings {
  host: string;
  port: number;
  /** `none`: plain; `starttls`: upgrade required; `tls`: TLS from the first byte. */
  security: 'none' | 'starttls' | 'tls';
  username: string | null;
  password: string | null;
  from: string;
  rejectUnauthorized: boolean;
}

export interface MqttSettings {
  url: string;
  username: string | null;
  password: string | null;
  topicPrefix: string;
  qos: 0 | 1;
  rejectUnauthorized: boolean;
}

export interface InstanceSettings {
  autoResolve: boolean;
  /** Notifications per minute per channel (one destination set's e-mail, one webhook, one topic). */
  rateLimitPerMinute: number;
  smtp: SmtpSettings | null;
  mqtt: MqttSettings | null;
  notify: Destinations;
}

export const NO_DESTINATIONS: Destinations = {
  enabled: false,
  minSeverity: 'INFO',
  emails: [],
  webhooks: [],
  mqtt: false,
  mqttTopic: null,
};

export const DEFAULT_INSTANCE: InstanceSettings = {
  autoResolve: true,
  rateLimitPerMinute: 30,
  smtp: null,
  mqtt: null,
  notify: NO_DESTINATIONS,
};

/** A change as a caller sends it: secrets in clear, left out to keep the stored one. */
export interface DestinationsInput {
  enabled?: boolean | undefined;
  minSeverity?: Severity | undefined;
  emails?: string[] | undefined;
  webhooks?: { url: string; secret?: string | null | undefined }[] | undefined;
  mqtt?: boolean | undefined;
  mqttTopic?: string | null | undefined;
}

export interface InstanceInput {
  autoResolve?: boolean | undefined;
  rateLimitPerMinute?: number | undefined;
  smtp?:
    | (Omit<SmtpSettings, 'password' | 'username' | 'rejectUnauthorized' | 'security'> & {
        security?: SmtpSettings['security'] | undefined;
        username?: string | null | undefined;
        password?: string | null | undefined;
        rejectUnauthorized?: boolean | undefined;
      })
    | null
    | undefined;
  mqtt?:
    | (Pick<MqttSettings, 'url'> & {
        username?: string | null | undefined;
        password?: string | null | undefined;
        topicPrefix?: string | undefined;
        qos?: 0 | 1 | undefined;
        rejectUnauthorized?: boolean | undefined;
      })
    | null
    | undefined;
  notify?: DestinationsInput | undefined;
}

const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+$/;

function checkUrl(url: string, field: string, protocols: string[]): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw badRequest(`${field} is not a URL: "${url}"`);
  }
  if (!protocols.includes(u.protocol))
    throw badRequest(
      `${field} must be ${protocols.map((p) => p.replace(':', '')).join(' or ')}, got "${u.protocol}"`,
    );
}

function checkTopic(topic: string, field: string): void {
  if (topic === '' || topic.length > 500 || /[#+]/.test(topic) || topic.includes('\u0000'))
    throw badRequest(`${field} must be 1 to 500 characters without the wildcards + and #`);
}

/** A destinations change applied to what is stored (secrets sealed; left out: kept). */
export function mergeDestinations(
  box: SecretBox,
  stored: Destinations,
  input: DestinationsInput,
): Destinations {
  const emails = input.emails ?? stored.emails;
  if (emails.length > MAX_RECIPIENTS) throw badRequest(`emails: at most ${MAX_RECIPIENTS} recipients`);
  for (const e of emails)
    if (!EMAIL.test(e) || e.length > 320) throw badRequest(`emails: "${e}" is not an address`);
  const given: { url: string; secret?: string | null | undefined }[] =
    input.webhooks ?? stored.webhooks.map((w) => ({ url: w.url }));
  const webhooks = given.map((w) => {
    checkUrl(w.url, 'webhooks[].url', ['http:', 'https:']);
    const kept = stored.webhooks.find((s) => s.url === w.url)?.secret ?? null;
    const secret = w.secret === undefined ? kept : w.secret === null ? null : box.seal(w.secret);
    return { url: w.url, secret };
  });
  if (webhooks.length > MAX_WEBHOOKS) throw badRequest(`webhooks: at most ${MAX_WEBHOOKS}`);
  const mqttTopic = input.mqttTopic === undefined ? stored.mqttTopic : input.mqttTopic;
  if (mqttTopic !== null) checkTopic(mqttTopic, 'mqttTopic');
  const minSeverity = input.minSeverity ?? stored.minSeverity;
  if (!SEVERITIES.includes(minSeverity))
    throw badRequest(`minSeverity must be one of ${SEVERITIES.join(', ')}`);
  return {
    enabled: input.enabled ?? stored.enabled,
    minSeverity,
    emails: [...new Set(emails)],
    webhooks,
    mqtt: input.mqtt ?? stored.mqtt,
    mqttTopic,
  };
}

/** An instance settings change applied to what is stored. */
export function mergeInstance(
  box: SecretBox,
  stored: InstanceSettings,
  input: InstanceInput,
): InstanceSettings {
  const seal = (given: string | null | undefined, kept: string | null) =>
    given === undefined ? kept : given === null ? null : box.seal(given);
  let smtp = stored.smtp;
  if (input.smtp === null) smtp = null;
  else if (input.smtp) {
    const s = input.smtp;
    if (!s.host || s.host.length > 253) throw badRequest('smtp.host must have 1 to 253 characters');
    if (!EMAIL.test(s.from.replace(/^.*<(.+)>\s*$/, '$1')))
      throw badRequest(`smtp.from "${s.from}" is not an address`);
    smtp = {
      host: s.host,
      port: s.port,
      security: s.security ?? 'starttls',
      username: s.username === undefined ? (stored.smtp?.username ?? null) : s.username,
      password: seal(s.password, stored.smtp?.password ?? null),
      from: s.from,
      rejectUnauthorized: s.rejectUnauthorized ?? true,
    };
  }
  let mqtt = stored.mqtt;
  if (input.mqtt === null) mqtt = null;
  else if (input.mqtt) {
    const m = input.mqtt;
    checkUrl(m.url, 'mqtt.url', ['mqtt:', 'mqtts:', 'ws:', 'wss:']);
    const topicPrefix = m.topicPrefix ?? stored.mqtt?.topicPrefix ?? 'millwright/incidents';
    checkTopic(topicPrefix, 'mqtt.topicPrefix');
    mqtt = {
      url: m.url,
      username: m.username === undefined ? (stored.mqtt?.username ?? null) : m.username,
      password: seal(m.password, stored.mqtt?.password ?? null),
      topicPrefix,
      qos: m.qos ?? 1,
      rejectUnauthorized: m.rejectUnauthorized ?? true,
    };
  }
  return {
    autoResolve: input.autoResolve ?? stored.autoResolve,
    rateLimitPerMinute: input.rateLimitPerMinute ?? stored.rateLimitPerMinute,
    smtp,
    mqtt,
    notify: input.notify ? mergeDestinations(box, stored.notify, input.notify) : stored.notify,
  };
}

/** Destinations as answered: no secret, whether one is set. */
export function destinationsView(d: Destinations) {
  return {
    enabled: d.enabled,
    minSeverity: d.minSeverity,
    emails: d.emails,
    webhooks: d.webhooks.map((w) => ({ url: w.url, secretSet: w.secret !== null })),
    mqtt: d.mqtt,
    mqttTopic: d.mqttTopic,
  };
}

/** Instance settings as answered: no secret, whether one is set. */
export function instanceView(s: InstanceSettings) {
  return {
    autoResolve: s.autoResolve,
    rateLimitPerMinute: s.rateLimitPerMinute,
    smtp: s.smtp && {
      host: s.smtp.host,
      port: s.smtp.port,
      security: s.smtp.security,
      username: s.smtp.username,
      passwordSet: s.smtp.password !== null,
      from: s.smtp.from,
      rejectUnauthorized: s.smtp.rejectUnauthorized,
    },
    mqtt: s.mqtt && {
      url: s.mqtt.url,
      username: s.mqtt.username,
      passwordSet: s.mqtt.password !== null,
      topicPrefix: s.mqtt.topicPrefix,
      qos: s.mqtt.qos,
      rejectUnauthorized: s.mqtt.rejectUnauthorized,
    },
    notify: destinationsView(s.notify),
  };
}

export function parseInstance(value: string | undefined): InstanceSettings {
  if (!value) return DEFAULT_INSTANCE;
  const v = JSON.parse(value) as Partial<InstanceSettings>;
  return { ...DEFAULT_INSTANCE, ...v, notify: { ...NO_DESTINATIONS, ...v.notify } };
}

export function parseDestinations(value: string | undefined): Destinations {
  if (!value) return NO_DESTINATIONS;
  return { ...NO_DESTINATIONS, ...(JSON.parse(value) as Partial<Destinations>) };
}
