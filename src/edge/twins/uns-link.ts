/**
 * The edge's MQTT client of the UNS broker, for `UNS` attributes: one connection
 * (`--uns-mqtt-url`, `--uns-username`, `--uns-password`), one MQTT subscription per topic however
 * many attributes read it; payloads are parsed as JSON when they are JSON, else kept as text.
 * It reconnects on its own (and subscribes again); while down, `problem` says why.
 */
import mqtt, { type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { UnsSource } from './runtime.js';

export interface UnsLinkOptions {
  url: string;
  username?: string | undefined;
  password?: string | undefined;
  logger?: Logger | undefined;
}

export class UnsLink implements UnsSource {
  readonly #client: MqttClient;
  readonly #handlers = new Map<string, Set<(payload: unknown) => void>>();
  #problem: string | null = 'connecting';

  constructor(options: UnsLinkOptions) {
    const log = options.logger;
    this.#client = mqtt.connect(options.url, {
      username: options.username,
      password: options.password,
      reconnectPeriod: 2000,
      resubscribe: false,
      connectTimeout: 10_000,
      rejectUnauthorized: false,
      clientId: `millwright-twins-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
    });
    this.#client.on('connect', () => {
      this.#problem = null;
      // Subscriptions made while down, and all of them again after a reconnect.
      const topics = [...this.#handlers.keys()];
      if (topics.length > 0) this.#client.subscribe(topics, { qos: 0 });
      log?.info({ url: options.url }, 'digital twins connected to the UNS broker');
    });
    this.#client.on('error', (err) => {
      if (this.#problem !== err.message)
        log?.warn({ url: options.url, err: err.message }, 'digital twins: UNS broker');
      this.#problem = err.message;
    });
    this.#client.on('close', () => {
      this.#problem ??= 'disconnected';
    });
    this.#client.on('message', (topic, buf) => {
      const handlers = this.#handlers.get(topic);
      if (!handlers) return;
      const text = buf.toString('utf8');
      let payload: unknown = text;
      try {
        payload = JSON.parse(text);
      } catch {
        // not JSON: the text itself
      }
      for (const h of handlers) h(payload);
    });
  }

  get problem(): string | null {
    return this.#problem;
  }

  subscribe(topic: string, handler: (payload: unknown) => void): () => void {
    let set = this.#handlers.get(topic);
    if (!set) {
      set = new Set();
      this.#handlers.set(topic, set);
      if (this.#client.connected) this.#client.subscribe(topic, { qos: 0 });
    }
    set.add(handler);
    return () => {
      const s = this.#handlers.get(topic);
      if (!s) return;
      s.delete(handler);
      if (s.size === 0) {
        this.#handlers.delete(topic);
        if (this.#client.connected) this.#client.unsubscribe(topic);
      }
    };
  }

  /** Resolves once connected (or rejects after `ms`). */
  ready(ms = 10_000): Promise<void> {
    if (this.#client.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`UNS broker: ${this.#problem ?? 'no connection'}`)),
        ms,
      );
      this.#client.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#client.end(true, {}, () => resolve()));
  }
}
