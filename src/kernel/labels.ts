/**
 * Form labels made from property names, for the catalogues that describe forms (the driver
 * catalogue's device and tag properties, the integrations' provider properties): the console and
 * any other client show `Label` beside the field. Sentence case, the protocol's acronyms as they
 * are written (`willQoS` is "Will QoS", `caCert` "CA certificate", `endpointUrl` "Endpoint URL"),
 * and the unit, when the name or the description gives one, in brackets
 * (`requestTimeoutMs` is "Request timeout (ms)"; `keepalive` described "keepalive, seconds" is
 * "Keep-alive (s)").
 *
 * ```ts
 * propertyLabel('willQoS');                                   // 'Will QoS'
 * propertyLabel('reconnectInterval', 'wait before a new connection attempt, ms'); // 'Reconnect interval (ms)'
 * ```
 */

/** How a word of a name is written in a label (lowercase key); other words are lowercased. */
const WORDS: Record<string, string> = {
  qos: 'QoS',
  ca: 'CA',
  cert: 'certificate',
  certs: 'certificates',
  tls: 'TLS',
  ssl: 'SSL',
  id: 'ID',
  ids: 'IDs',
  url: 'URL',
  uri: 'URI',
  oid: 'OID',
  oids: 'OIDs',
  cov: 'COV',
  db: 'DB',
  plc: 'PLC',
  opcua: 'OPC UA',
  json: 'JSON',
  sas: 'SAS',
  ttl: 'TTL',
  ip: 'IP',
  tcp: 'TCP',
  udp: 'UDP',
  http: 'HTTP',
  mqtt: 'MQTT',
  pem: 'PEM',
  fw: 'firmware',
  auth: 'authentication',
  priv: 'privacy',
  resp: 'response',
  len: 'length',
  stat: 'statistics',
  inflight: 'in flight',
  keepalive: 'keep-alive',
  jetstream: 'JetStream',
};

/** Units a name ends with, and how the label writes them. */
const NAME_UNITS: Record<string, string> = { ms: 'ms', seconds: 's', secs: 's' };

/** Units a description states (`..., ms`, `in milliseconds`, `seconds to wait ...`). */
const DESCRIPTION_UNITS: [RegExp, string][] = [
  [/(?:,|\bin) (?:ms|milliseconds)\b/i, 'ms'],
  [/(?:,|\bin) seconds\b|^seconds\b/i, 's'],
  [/, bytes\b/i, 'bytes'],
];

/** The words of a camelCase or PascalCase name, acronym runs kept whole (`PLCProgram`: PLC, Program). */
export function nameWords(name: string): string[] {
  // Mixed-case acronyms first, so that `willQoS` is not split into Qo and S.
  const marked = name.replace(/QoS/g, '_Qos_');
  return marked.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+/g) ?? [name];
}

/** The form label of property `name` (see the top of this file). */
export function propertyLabel(name: string, description = ''): string {
  const words = nameWords(name).map((w) => w.toLowerCase());
  let unit: string | undefined;
  const last = words[words.length - 1];
  if (words.length > 1 && last !== undefined && NAME_UNITS[last]) {
    unit = NAME_UNITS[last];
    words.pop();
  } else {
    unit = DESCRIPTION_UNITS.find(([re]) => re.test(description))?.[1];
  }
  // "keep alive" is one word in a label.
  for (let i = 0; i < words.length - 1; i++) {
    if (words[i] === 'keep' && words[i + 1] === 'alive') words.splice(i, 2, 'keepalive');
  }
  const shown = words.map((w) => WORDS[w] ?? w);
  const first = shown[0] ?? name;
  shown[0] = first.charAt(0).toUpperCase() + first.slice(1);
  const label = shown.join(' ');
  return unit && !words.includes(unit) ? `${label} (${unit})` : label;
}
