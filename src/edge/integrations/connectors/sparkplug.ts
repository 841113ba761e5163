/**
 * Sparkplug B over MQTT (Eclipse Sparkplug 3.0 topic namespace and protobuf payload). The edge is
 * one edge node `spBv1.0/<groupId>/.../<edgeNodeId>`; each DataHub device is a Sparkplug device
 * (its id: the subscription's remote name, `{device}` by default) and each tag a metric.
 *
 * - Connect: the MQTT will is the NDEATH (QoS 1, `bdSeq`); then NBIRTH with `seq` 0, `bdSeq` and
 *   `Node Control/Rebirth`; then a DBIRTH for every device known from earlier sessions.
 * - Data: a value of a device not yet born, or of a metric its last DBIRTH did not list, first
 *   gets a DBIRTH with every metric known for the device (last values); then DDATA. `seq` goes
 *   0..255 and wraps, over every message after NBIRTH.
 * - An NCMD with `Node Control/Rebirth` = true makes the node publish NBIRTH and the DBIRTHs again.
 * - Remote-to-local subscriptions (an MQTT filter such as `spBv1.0/plant/DCMD/edge1/#`) hand over
 *   each message decoded as JSON `{ timestamp, seq, metrics: [{ name, datatype, value }] }`; a
 *   payload that is not a Sparkplug payload is handed over as is (and counted as malformed).
 */
import mqtt, { type MqttClient } from 'mqtt';
import protobuf from 'protobufjs';
import { mqttMatch, mqttOptions } from './mqtt.js';
import type { Connector, ConnectorContext, OutMessage, RemoteSubscription } from './types.js';
import { reasonOf } from './types.js';

/** The part of Eclipse Tahu's `sparkplug_b.proto` used here (unknown fields are skipped on decode). */
const PROTO = `
syntax = "proto2";
package org.eclipse.tahu.protobuf;
message Payload {
  message Metric {
    optional string name = 1;
    optional uint64 alias = 2;
    optional uint64 timestamp = 3;
    optional uint32 datatype = 4;
    optional bool is_historical = 5;
    optional bool is_transient = 6;
    optional bool is_null = 7;
    oneof value {
      uint32 int_value = 10;
      uint64 long_value = 11;
      float float_value = 12;
      double double_value = 13;
      bool boolean_value = 14;
      string string_value = 15;
      bytes bytes_value = 16;
    }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
  optional string uuid = 4;
  optional bytes body = 5;
}
`;

export const SparkplugPayload = protobuf.parse(PROTO).root.lookupType('org.eclipse.tahu.protobuf.Payload');

/** Sparkplug B data types (the ones produced here). */
export const DataType = {
  Int32: 3,
  Int64: 4,
  UInt32: 7,
  UInt64: 8,
  Float: 9,
  Double: 10,
  Boolean: 11,
  String: 12,
} as const;

export interface SpMetric {
  name: string;
  datatype: number;
  value: unknown;
  timestamp?: number;
}

function typeOf(datatype: unknown, value: unknown): number {
  switch (datatype) {
    case 'float32':
      return DataType.Float;
    case 'float64':
      return DataType.Double;
    case 'int8':
    case 'int16':
    case 'int32':
      return DataType.Int32;
    case 'int64':
      return DataType.Int64;
    case 'uint8':
    case 'uint16':
    case 'uint32':
      return DataType.UInt32;
    case 'uint64':
      return DataType.UInt64;
    case 'bool':
      return DataType.Boolean;
    case 'string':
      return DataType.String;
  }
  if (typeof value === 'boolean') return DataType.Boolean;
  if (typeof value === 'number') return DataType.Double;
  return DataType.String;
}

function metricMessage(m: SpMetric): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name: m.name,
    datatype: m.datatype,
    timestamp: m.timestamp ?? Date.now(),
  };
  const v = m.value;
  if (v === null || v === undefined) out.isNull = true;
  else if (m.datatype === DataType.Boolean) out.booleanValue = Boolean(v);
  else if (m.datatype === DataType.Float) out.floatValue = Number(v);
  else if (m.datatype === DataType.Double) out.doubleValue = Number(v);
  else if (m.datatype === DataType.Int32 || m.datatype === DataType.UInt32) out.intValue = Number(v) >>> 0;
  else if (m.datatype === DataType.Int64 || m.datatype === DataType.UInt64) {
    // Negative Int64 values go as their two's complement, as the specification says.
    out.longValue = typeof v === 'bigint' ? v.toString() : Math.trunc(Number(v));
  } else out.stringValue = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

export function encodePayload(metrics: SpMetric[], seq: number | undefined, timestamp = Date.now()): Buffer {
  const msg = SparkplugPayload.fromObject({
    timestamp,
    metrics: metrics.map(metricMessage),
    ...(seq === undefined ? {} : { seq }),
  });
  return Buffer.from(SparkplugPayload.encode(msg).finish());
}

/** A Sparkplug payload as plain JSON: `{ timestamp, seq, metrics: [{ name, datatype, value }] }`. */
export function decodePayload(bytes: Buffer): { timestamp?: number; seq?: number; metrics: SpMetric[] } {
  const obj = SparkplugPayload.toObject(SparkplugPayload.decode(bytes), {
    longs: Number,
    defaults: false,
  }) as {
    timestamp?: number;
    seq?: number;
    metrics?: Array<Record<string, unknown>>;
  };
  const metrics = (obj.metrics ?? []).map((m) => {
    const value =
      m.isNull === true
        ? null
        : (m.booleanValue ??
          m.doubleValue ??
          m.floatValue ??
          m.longValue ??
          m.intValue ??
          m.stringValue ??
          null);
    return {
      name: String(m.name ?? ''),
      datatype: Number(m.datatype ?? 0),
      value,
      ...(m.timestamp === undefined ? {} : { timestamp: Number(m.timestamp) }),
    };
  });
  return {
    ...(obj.timestamp === undefined ? {} : { timestamp: Number(obj.timestamp) }),
    ...(obj.seq === undefined ? {} : { seq: Number(obj.seq) }),
    metrics,
  };
}

const sanitize = (id: string) => id.replace(/[/+#]/g, '_') || '_';

interface Device {
  metrics: Map<string, SpMetric>;
  /** Metric names in its last DBIRTH (undefined: not born in this session). */
  born: Set<string> | undefined;
}

/** Known devices and bdSeq outlive a connection (a rebirth after reconnect lists them again). */
const sessions = new Map<string, { bdSeq: number; devices: Map<string, Device> }>();

export class SparkplugConnector implements Connector {
  readonly separator = '/' as const;
  readonly pipelined = true;
  readonly #ctx: ConnectorContext;
  #client: MqttClient | undefined;
  #closed = false;
  #seq = 0;
  readonly #state: { bdSeq: number; devices: Map<string, Device> };

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
    let s = sessions.get(ctx.instanceId);
    if (!s) sessions.set(ctx.instanceId, (s = { bdSeq: 0, devices: new Map() }));
    this.#state = s;
  }

  get #group(): string {
    return String(this.#ctx.config.groupId);
  }

  get #node(): string {
    return String(this.#ctx.config.edgeNodeId);
  }

  #topic(type: string, device?: string): string {
    return `spBv1.0/${this.#group}/${type}/${this.#node}${device === undefined ? '' : `/${device}`}`;
  }

  #nextSeq(): number {
    this.#seq = (this.#seq + 1) % 256;
    return this.#seq;
  }

  async connect(subscriptions: RemoteSubscription[]): Promise<void> {
    const { url, options } = mqttOptions(this.#ctx);
    const bdSeq = this.#state.bdSeq;
    this.#state.bdSeq = (bdSeq + 1) % 256;
    options.will = {
      topic: this.#topic('NDEATH'),
      payload: encodePayload([{ name: 'bdSeq', datatype: DataType.UInt64, value: bdSeq }], undefined),
      qos: 1,
      retain: false,
    };
    options.clientId = String(
      this.#ctx.config.clientId ?? `millwright-sp-${this.#group}-${this.#node}`,
    ).slice(0, 64);
    const client = mqtt.connect(url, options);
    this.#client = client;
    let lastError: string | undefined;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => {
        cleanup();
        client.end(true);
        reject(new Error(reasonOf(err)));
      };
      const closed = () => fail(new Error(lastError ?? 'connection closed before CONNACK'));
      const onError = (err: Error) => {
        lastError = reasonOf(err);
        fail(err);
      };
      const ok = () => {
        cleanup();
        resolve();
      };
      const cleanup = () => {
        client.off('error', onError);
        client.off('close', closed);
        client.off('connect', ok);
      };
      client.once('error', onError);
      client.once('close', closed);
      client.once('connect', ok);
    });
    client.on('error', (err) => {
      lastError = reasonOf(err);
    });
    client.on('close', () => {
      if (!this.#closed) this.#ctx.hooks.down(lastError ?? 'connection closed by the broker');
    });
    const ncmd = this.#topic('NCMD');
    client.on('message', (topic, payload) => {
      if (topic === ncmd) this.#command(payload);
      for (const s of subscriptions) {
        if (!mqttMatch(s.remote, topic)) continue;
        let json: Buffer;
        try {
          json = Buffer.from(JSON.stringify(decodePayload(payload)));
        } catch {
          json = payload; // not a Sparkplug payload: the runner counts it as malformed
        }
        this.#ctx.hooks.message(s.id, topic, json);
      }
    });
    await client.subscribeAsync([ncmd, ...subscriptions.map((s) => s.remote)], { qos: 1 });
    await this.#birth(bdSeq);
  }

  /** NBIRTH (seq 0) and a DBIRTH for each known device. */
  async #birth(bdSeq: number): Promise<void> {
    const client = this.#client!;
    this.#seq = 0;
    await client.publishAsync(
      this.#topic('NBIRTH'),
      encodePayload(
        [
          { name: 'bdSeq', datatype: DataType.UInt64, value: bdSeq },
          { name: 'Node Control/Rebirth', datatype: DataType.Boolean, value: false },
        ],
        0,
      ),
      { qos: 0 },
    );
    for (const [id, device] of this.#state.devices) {
      device.born = undefined;
      if (device.metrics.size > 0) this.#dbirth(id, device);
    }
  }

  #dbirth(id: string, device: Device, callback?: (err?: Error) => void): void {
    device.born = new Set(device.metrics.keys());
    this.#client!.publish(
      this.#topic('DBIRTH', id),
      encodePayload([...device.metrics.values()], this.#nextSeq()),
      { qos: this.#qos },
      callback,
    );
  }

  get #qos(): 0 | 1 {
    return this.#ctx.config.qos === 1 ? 1 : 0;
  }

  #command(payload: Buffer): void {
    try {
      const p = decodePayload(payload);
      const rebirth = p.metrics.find((m) => m.name === 'Node Control/Rebirth');
      if (rebirth?.value === true) {
        this.#ctx.logger.info({ instance: this.#ctx.instanceId }, 'sparkplug: rebirth requested');
        void this.#birth((this.#state.bdSeq + 255) % 256).catch(() => undefined);
      }
    } catch (err) {
      this.#ctx.logger.warn({ err: reasonOf(err) }, 'sparkplug: NCMD that is not a Sparkplug payload');
    }
  }

  send(batch: OutMessage[]): Promise<void> {
    const client = this.#client;
    if (!client || !client.connected) return Promise.reject(new Error('not connected'));
    return new Promise<void>((resolve, reject) => {
      let left = 0;
      let done = false;
      const acked = (err?: Error) => {
        if (done) return;
        if (err) {
          done = true;
          reject(err);
        } else if (--left === 0) {
          done = true;
          resolve();
        }
      };
      for (const m of batch) {
        let value: Record<string, unknown>;
        try {
          const parsed: unknown = JSON.parse(m.payload.toString('utf8'));
          value =
            parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : { value: parsed };
        } catch {
          value = { value: m.payload.toString('utf8') };
        }
        const id = sanitize(m.topic);
        const name =
          typeof value.tagName === 'string' && value.tagName
            ? value.tagName
            : (m.subject.split('.').pop() ?? 'value');
        const metric: SpMetric = {
          name,
          datatype: typeOf(value.datatype, value.value),
          value: value.value,
          timestamp: typeof value.timestamp === 'number' ? value.timestamp : m.ts,
        };
        let device = this.#state.devices.get(id);
        if (!device) this.#state.devices.set(id, (device = { metrics: new Map(), born: undefined }));
        device.metrics.set(name, metric);
        if (!device.born || !device.born.has(name)) {
          left++;
          this.#dbirth(id, device, acked);
          continue;
        }
        left++;
        client.publish(
          this.#topic('DDATA', id),
          encodePayload([metric], this.#nextSeq()),
          { qos: this.#qos },
          acked,
        );
      }
      if (left === 0) resolve();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    // A clean disconnect sends no will: publish the NDEATH ourselves.
    if (client?.connected) {
      await client
        .publishAsync(
          this.#topic('NDEATH'),
          encodePayload(
            [{ name: 'bdSeq', datatype: DataType.UInt64, value: (this.#state.bdSeq + 255) % 256 }],
            undefined,
          ),
          { qos: 1 },
        )
        .catch(() => undefined);
    }
    if (client) await client.endAsync(true).catch(() => undefined);
  }
}
