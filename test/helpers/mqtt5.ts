/**
 * MQTT 5 helpers for the UNS tests: the `mqtt` client with protocol version 5 (keeping its
 * CONNACK), and a raw MQTT 5 connection built on mqtt-packet for what the client library hides
 * (acknowledgements withheld, DISCONNECT reason codes, oversized packets).
 */
import { connect as netConnect, type Socket } from 'node:net';
import { createRequire } from 'node:module';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { eventually } from './util.js';

const require = createRequire(import.meta.url);
const mqttPacket = require('mqtt-packet') as {
  generate: (packet: object, opts?: { protocolVersion?: number }) => Buffer;
  parser: (opts?: { protocolVersion?: number }) => NodeJS.EventEmitter & { parse: (b: Buffer) => number };
};

export type Packet = Record<string, any> & { cmd: string };

export interface Connected5 {
  client: MqttClient;
  connack: Packet;
}

/** Connects with `mqtt` and protocol version 5; resolves with the client and its CONNACK. */
export function connect5(url: string, options: IClientOptions = {}): Promise<Connected5> {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(url, {
      protocolVersion: 5,
      reconnectPeriod: 0,
      connectTimeout: 5000,
      rejectUnauthorized: false,
      ...options,
    });
    const onError = (err: Error) => {
      client.end(true);
      reject(err);
    };
    client.once('connect', (connack) => {
      client.removeListener('error', onError);
      resolve({ client, connack: connack as unknown as Packet });
    });
    client.once('error', onError);
    client.once('close', () => reject(new Error('closed before CONNACK')));
  });
}

/** SUBSCRIBE with options; answers the reason codes of the SUBACK. */
export function subscribe5(
  client: MqttClient,
  topic: string | string[],
  opts: Record<string, unknown> = {},
): Promise<number[]> {
  return new Promise((resolve, reject) =>
    client.subscribe(topic, { qos: 0, ...opts } as never, (err, granted) => {
      const codes = (err as { packet?: { granted?: number[] } } | null)?.packet?.granted;
      if (codes) return resolve(codes);
      if (err && !granted) return reject(err);
      resolve((granted ?? []).map((g) => g.qos));
    }),
  );
}

/** PUBLISH; resolves with the reason code of its PUBACK/PUBREC (0 for QoS 0 or success). */
export function publish5(
  client: MqttClient,
  topic: string,
  payload: string | Buffer,
  opts: Record<string, unknown> = {},
): Promise<number> {
  return new Promise((resolve) =>
    client.publish(topic, payload, { qos: 0, ...opts } as never, (err) => {
      const code = (err as { code?: number } | undefined)?.code;
      resolve(err ? (typeof code === 'number' ? code : -1) : 0);
    }),
  );
}

export interface Message5 {
  topic: string;
  payload: string;
  packet: Packet;
}

/** Collects the messages a client receives. */
export function collect(client: MqttClient): Message5[] {
  const got: Message5[] = [];
  client.on('message', (topic, payload, packet) =>
    got.push({ topic, payload: payload.toString(), packet: packet as unknown as Packet }),
  );
  return got;
}

export function end5(client: MqttClient): Promise<void> {
  return new Promise((resolve) => client.end(true, {}, () => resolve()));
}

/** A raw MQTT 5 connection: packets in and out as mqtt-packet objects. */
export interface Raw5 {
  socket: Socket;
  packets: Packet[];
  send(packet: Packet): void;
  /** The next packet of `cmd` not yet taken; rejects after `ms`. */
  next(cmd: string, ms?: number): Promise<Packet>;
  closed(ms?: number): Promise<void>;
  isClosed(): boolean;
}

export async function raw5(port: number, connect: Record<string, any>, protocolVersion = 5): Promise<Raw5> {
  const socket = netConnect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  const parser = mqttPacket.parser({ protocolVersion });
  const packets: Packet[] = [];
  const taken = new Set<Packet>();
  let isClosed = false;
  parser.on('packet', (p: Packet) => packets.push(p));
  socket.on('data', (d) => parser.parse(d));
  socket.on('close', () => (isClosed = true));
  const raw: Raw5 = {
    socket,
    packets,
    send: (packet) => socket.write(mqttPacket.generate(packet, { protocolVersion })),
    async next(cmd, ms = 5000) {
      const end = Date.now() + ms;
      for (;;) {
        const p = packets.find((x) => x.cmd === cmd && !taken.has(x));
        if (p) {
          taken.add(p);
          return p;
        }
        if (Date.now() > end) throw new Error(`no ${cmd} within ${ms} ms (got ${packets.map((x) => x.cmd)})`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async closed(ms = 5000) {
      await eventually(() => isClosed, ms, 'connection closed');
    },
    isClosed: () => isClosed,
  };
  raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 60, ...connect });
  return raw;
}
