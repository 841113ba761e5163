/**
 * The MQTT driver: subscribes to topics of an external broker; each tag is a topic and a JSON
 * path into its payload (`$.data.temp`, `data.items[0]`; empty: the whole payload). Values arrive
 * by subscription, not polling. A write publishes the value on the tag's topic (as JSON, or
 * wrapped in objects along the JSON path). Browsing listens on `#` for a moment and lists the
 * topics (and the scalar fields of JSON payloads) it saw.
 */
import { readFileSync } from 'node:fs';
import type { IClientOptions, MqttClient } from 'mqtt';
import type { BrowseNode } from '../../devicehub/index.js';
import { coerce } from '../convert.js';
import { errorText } from '../engine.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverContext,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type TagValue,
  type ValueSink,
} from '../types.js';

/** The steps of a JSON path: `$.a.b[2]` → ['a', 'b', 2]. */
export function parseJsonPath(path: string): Array<string | number> {
  let p = path.trim();
  if (p.startsWith('$')) p = p.slice(1);
  const steps: Array<string | number> = [];
  const re = /\.?([^.[\]]+)|\[(\d+)\]|\[["']([^"']*)["']\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(p)) !== null) {
    if (m[1] !== undefined) steps.push(/^\d+$/.test(m[1]) ? Number(m[1]) : m[1]);
    else if (m[2] !== undefined) steps.push(Number(m[2]));
    else steps.push(m[3]!);
  }
  return steps;
}

/** The value at a JSON path of an MQTT payload, as the tag's value type. */
export function extract(payload: Buffer, jsonPath: string, valueType: string): ReadResult {
  const text = payload.toString('utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    if (jsonPath.trim() !== '' && jsonPath.trim() !== '$')
      return new ReadFailure(`payload is not JSON: ${text.slice(0, 64)}`);
    doc = text;
  }
  let v: unknown = doc;
  for (const step of parseJsonPath(jsonPath)) {
    if (v === null || typeof v !== 'object' || !(step in (v as object)))
      return new ReadFailure(`JSON path ${jsonPath} not found in the payload`);
    v = (v as Record<string | number, unknown>)[step];
  }
  if (valueType === 'json') return v as TagValue;
  if (valueType === 'string') return typeof v === 'string' ? v : JSON.stringify(v);
  try {
    return coerce(v, valueType);
  } catch (err) {
    return new ReadFailure(`value at ${jsonPath || 'the payload'}: ${errorText(err)}`);
  }
}

function clientOptions(props: Record<string, string>): { url: string; options: IClientOptions } {
  const tls = props.tls === 'true';
  const options: IClientOptions = {
    clientId: props.clientId || `millwright-${Math.random().toString(16).slice(2, 10)}`,
    keepalive: Number(props.keepAliveSeconds ?? 60),
    reconnectPeriod: 0,
    connectTimeout: 5000,
    clean: true,
  };
  if (props.username) options.username = props.username;
  if (props.password) options.password = props.password;
  if (tls) {
    if (props.caCert) {
      options.ca = props.caCert.includes('-----BEGIN') ? props.caCert : readFileSync(props.caCert);
    } else options.rejectUnauthorized = false;
  }
  return { url: `${tls ? 'mqtts' : 'mqtt'}://${props.host}:${props.port ?? 1883}`, options };
}

async function open(props: Record<string, string>): Promise<MqttClient> {
  const { url, options } = clientOptions(props);
  // Loaded on first use, like the other protocol libraries: the edge starts without them.
  const mqtt = (await import('mqtt')).default;
  try {
    return await mqtt.connectAsync(url, options);
  } catch (err) {
    throw new Error(`cannot connect to ${url}: ${errorText(err)}`);
  }
}

class MqttSession implements DriverSession {
  #client: MqttClient | undefined;
  #byTopic = new Map<string, TagSpec[]>();
  #sink: ValueSink | undefined;
  #closed = false;

  constructor(
    readonly device: DeviceSpec,
    readonly ctx: DriverContext,
  ) {}

  async connect(): Promise<void> {
    const client = await open(this.device.props);
    client.on('error', () => undefined);
    client.on('close', () => {
      if (!this.#closed)
        this.ctx.lost(`connection to broker ${this.device.props.host}:${this.device.props.port} closed`);
    });
    client.on('message', (topic, payload) => {
      const tags = this.#byTopic.get(topic);
      const sink = this.#sink;
      if (!tags || !sink) return;
      const now = Date.now();
      for (const tag of tags) sink(tag, extract(payload, tag.props.jsonPath ?? '', tag.valueType), now);
    });
    this.#client = client;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const c = this.#client;
    this.#client = undefined;
    if (c) await c.endAsync(true).catch(() => undefined);
  }

  async watch(tags: readonly TagSpec[], sink: ValueSink): Promise<readonly TagSpec[]> {
    const client = this.#client;
    if (!client) throw new Error('not connected');
    this.#sink = sink;
    const next = new Map<string, TagSpec[]>();
    for (const tag of tags) {
      const topic = tag.props.topic ?? '';
      const list = next.get(topic) ?? [];
      list.push(tag);
      next.set(topic, list);
    }
    const gone = [...this.#byTopic.keys()].filter((t) => !next.has(t));
    const added = [...next.keys()].filter((t) => !this.#byTopic.has(t));
    this.#byTopic = next;
    if (gone.length > 0) await client.unsubscribeAsync(gone);
    if (added.length > 0) {
      const subs: Record<string, { qos: 0 | 1 }> = {};
      for (const t of added)
        subs[t] = { qos: Math.max(...next.get(t)!.map((x) => Number(x.props.qos ?? 0))) === 1 ? 1 : 0 };
      const granted = await client.subscribeAsync(subs);
      for (const g of granted) {
        if (g.qos === 128) {
          for (const tag of next.get(g.topic) ?? [])
            sink(tag, new ReadFailure(`the broker refused the subscription to ${g.topic}`), Date.now());
        }
      }
    }
    return [];
  }

  async read(tags: readonly TagSpec[]): Promise<ReadResult[]> {
    return tags.map(() => new ReadFailure('MQTT tags are not polled: values arrive by subscription'));
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const client = this.#client;
    if (!client) throw new Error('not connected');
    let doc: unknown = value;
    for (const step of parseJsonPath(tag.props.jsonPath ?? '').reverse()) {
      if (typeof step === 'number') {
        const arr: unknown[] = [];
        arr[step] = doc;
        doc = arr;
      } else doc = { [step]: doc };
    }
    const payload = typeof doc === 'string' ? doc : JSON.stringify(doc);
    await client.publishAsync(tag.props.topic ?? '', payload, {
      qos: Number(tag.props.qos ?? 0) === 1 ? 1 : 0,
    });
  }
}

/** Listens on `#` for `ms` and answers the topic tree; JSON objects give a leaf per scalar field. */
export async function browseMqtt(props: Record<string, string>, ms = 1500): Promise<BrowseNode[]> {
  const client = await open(props);
  const seen = new Map<string, Buffer>();
  client.on('message', (topic, payload) => {
    if (seen.size < 10_000) seen.set(topic, payload);
  });
  try {
    await client.subscribeAsync('#', { qos: 0 });
    await new Promise((r) => setTimeout(r, ms));
  } finally {
    await client.endAsync(true).catch(() => undefined);
  }
  const root: BrowseNode[] = [];
  const folder = (list: BrowseNode[], name: string): BrowseNode => {
    let f = list.find((n) => n.Name === name && n.Children);
    if (!f) {
      f = { Name: name, Children: [] };
      list.push(f);
    }
    return f;
  };
  const leaf = (topic: string, path: string, v: unknown): BrowseNode => ({
    Name: path ? path.replace(/^\$\./, '') : (topic.split('/').pop() ?? topic),
    Description: `${topic}${path ? ` ${path}` : ''}`,
    RegisterName: 'Topic',
    ValueType: typeof v === 'number' ? 'float64' : typeof v === 'boolean' ? 'bool' : 'string',
    Properties: [
      { Name: 'topic', Value: topic },
      { Name: 'jsonPath', Value: path },
    ],
  });
  for (const [topic, payload] of [...seen].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const parts = topic.split('/').filter((p) => p !== '');
    let list = root;
    let doc: unknown;
    try {
      doc = JSON.parse(payload.toString('utf8'));
    } catch {
      doc = payload.toString('utf8');
    }
    if (doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
      for (const p of parts) list = folder(list, p).Children!;
      const walk = (o: Record<string, unknown>, prefix: string) => {
        for (const [k, v] of Object.entries(o)) {
          const path = `${prefix}.${k}`;
          if (v !== null && typeof v === 'object' && !Array.isArray(v))
            walk(v as Record<string, unknown>, path);
          else list.push(leaf(topic, path, v));
        }
      };
      walk(doc as Record<string, unknown>, '$');
    } else {
      for (const p of parts.slice(0, -1)) list = folder(list, p).Children!;
      list.push(leaf(topic, '', doc));
    }
  }
  return root;
}

export const mqttDriver: DriverFactory = {
  key: 'mqtt',
  create: (device, ctx) => new MqttSession(device, ctx),
  browse: async (device) => browseMqtt(device.properties),
};
