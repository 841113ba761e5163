/**
 * One running integration instance: its DataHub subscriptions, its disk queue, its connector and
 * its state machine. Local-to-remote: every message of a matching DataHub subject is appended to
 * the queue (whatever the state but Disabled); while Connected, a pump reads the queue in order,
 * keeps up to `maxInflight` messages in flight and deletes them once the remote acknowledged
 * them. Remote-to-local: what the connector receives is parsed as JSON and published on the
 * DataHub; anything else is counted as malformed and logged, not forwarded.
 */
import type { Logger } from 'pino';
import type { DataHub, Message, Subscription } from '../datahub/index.js';
import { isValidSubject } from '../datahub/index.js';
import type { ProviderDef } from './catalogue.js';
import type { Connector, ConnectorFactory, OutMessage, RemoteSubscription } from './connectors/types.js';
import { reasonOf } from './connectors/types.js';
import type { DiskQueue } from './queue.js';
import { StateMachine, type InstanceState } from './state.js';
import type { InstanceConfig } from './validation.js';

export interface RunnerSubscription {
  id: string;
  isLocalToRemote: boolean;
  enabled: boolean;
  localName: string;
  remoteName: string;
  config: Record<string, unknown>;
}

export interface RunnerOptions {
  instanceId: string;
  provider: ProviderDef;
  config: InstanceConfig;
  enabled: boolean;
  subscriptions: RunnerSubscription[];
  hub: DataHub;
  queue: DiskQueue;
  logger: Logger;
  factory: ConnectorFactory;
  trustedCa?: (() => string[] | undefined) | undefined;
}

export interface Counters {
  sent: number;
  received: number;
  enqueued: number;
  dropped: number;
  malformed: number;
}

/** Messages read from the queue per batch when the provider sets no batchSize. */
const DEFAULT_BATCH = 500;

/** Fills `{subject}`, `{device}`, `{tag}` and `{1}`..`{9}` (subject tokens) of a remote name. */
export function remoteTopic(template: string, msg: Message, separator: '/' | '.'): string {
  if (!template.includes('{')) return template;
  const tokens = msg.subject.split('.');
  let payload: Record<string, unknown> | undefined;
  const field = (name: string, fallback: string) => {
    try {
      payload ??= msg.json<Record<string, unknown>>() ?? {};
    } catch {
      payload = {};
    }
    const v = payload[name];
    return typeof v === 'string' && v !== '' ? v : fallback;
  };
  return template.replace(/\{(subject|device|tag|[1-9])\}/g, (_, key: string) => {
    if (key === 'subject') return separator === '/' ? tokens.join('/') : msg.subject;
    if (key === 'device') return field('deviceName', tokens[tokens.length - 2] ?? '');
    if (key === 'tag') return field('tagName', tokens[tokens.length - 1] ?? '');
    return tokens[Number(key) - 1] ?? '';
  });
}

/** The DataHub subject of a remote message: `{topic}` in the local name is the remote topic, as tokens. */
export function localSubject(template: string, remote: string): string {
  if (!template.includes('{topic}')) return template;
  const tokens = remote
    .split(/[/.]/)
    .map((t) => t.replace(/[\s*>]/g, '_'))
    .map((t) => (t === '' ? '_' : t));
  return template.replace(/\{topic\}/g, tokens.join('.'));
}

export class InstanceRunner {
  readonly machine = new StateMachine();
  readonly counters: Counters = { sent: 0, received: 0, enqueued: 0, dropped: 0, malformed: 0 };
  lastError = '';
  lastErrorAt: number | null = null;
  readonly #o: RunnerOptions;
  readonly #log: Logger;
  #subs: Subscription[] = [];
  #connector: Connector | undefined;
  #generation = 0;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #stopped = false;
  #malformedLogged = 0;

  constructor(options: RunnerOptions) {
    this.#o = options;
    this.#log = options.logger;
    options.queue.onCommit = () => {
      const w = this.#wake;
      this.#wake = undefined;
      w?.();
    };
    this.machine.onChange = (state, reason) => {
      if (state === 'Disconnected')
        this.#log.warn({ instance: options.instanceId, reason }, 'integration disconnected');
      else this.#log.info({ instance: options.instanceId, state }, 'integration state');
    };
  }

  get state(): InstanceState {
    return this.machine.state;
  }

  get queue(): DiskQueue {
    return this.#o.queue;
  }

  start(): void {
    if (!this.#o.enabled) {
      this.machine.move('Disabled', 'the instance is disabled');
      return;
    }
    for (const s of this.#o.subscriptions) {
      if (!s.enabled || !s.isLocalToRemote) continue;
      const sub = this.#o.hub.subscribe(s.localName, {
        skipOrigin: this,
        callback: (msg) => this.#enqueue(s, msg),
      });
      this.#subs.push(sub);
    }
    this.#attempt();
  }

  get #separator(): '/' | '.' {
    const t = this.#o.provider.transport;
    return t === 'mqtt' || t === 'sparkplug' ? '/' : '.';
  }

  #enqueue(s: RunnerSubscription, msg: Message): void {
    const topic = remoteTopic(s.remoteName, msg, this.#separator);
    // Without acknowledgements (QoS 0), connected, nothing queued or in flight: straight out.
    // Anything else goes through the disk queue, in order.
    const c = this.#live;
    if (c?.trySend && this.#inflight === 0 && this.#o.queue.depth === 0 && c.trySend(topic, msg.bytes())) {
      this.counters.sent++;
      return;
    }
    this.#o.queue.push(topic, msg.subject, msg.bytes());
    this.counters.enqueued++;
  }

  /** The connector while Connected (for the direct path), else undefined. */
  #live: Connector | undefined;
  /** Messages read from the queue and not yet acknowledged. */
  #inflight = 0;

  #attempt(): void {
    if (this.#stopped) return;
    const generation = ++this.#generation;
    this.machine.move('Connecting');
    const remoteSubs: RemoteSubscription[] = this.#o.subscriptions
      .filter((s) => s.enabled && !s.isLocalToRemote)
      .map((s) => ({ id: s.id, remote: s.remoteName, config: s.config }));
    let connector: Connector;
    try {
      connector = this.#o.factory({
        instanceId: this.#o.instanceId,
        provider: this.#o.provider,
        config: this.#o.config,
        logger: this.#log,
        ...(this.#o.trustedCa ? { trustedCa: this.#o.trustedCa } : {}),
        hooks: {
          message: (id, topic, payload) => this.#fromRemote(id, topic, payload),
          down: (reason) => {
            if (generation === this.#generation) this.#down(reason);
          },
        },
      });
    } catch (err) {
      this.#down(reasonOf(err));
      return;
    }
    this.#connector = connector;
    connector.connect(remoteSubs).then(
      () => {
        if (generation !== this.#generation || this.#stopped) {
          void connector.close();
          return;
        }
        this.machine.move('Connected');
        void this.#pump(generation, connector).finally(() => {
          if (this.#live === connector) this.#live = undefined;
        });
      },
      (err: unknown) => {
        if (generation === this.#generation) this.#down(reasonOf(err));
      },
    );
  }

  #down(reason: string): void {
    if (this.#stopped || this.machine.state === 'Disconnected' || this.machine.state === 'Disabled') return;
    this.#generation++;
    this.#live = undefined;
    this.#inflight = 0;
    this.lastError = reason;
    this.lastErrorAt = Date.now();
    this.machine.move('Disconnected', reason);
    const c = this.#connector;
    this.#connector = undefined;
    void c?.close().catch(() => undefined);
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
    const interval = Number(this.#o.config.reconnectInterval ?? 2000);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#attempt();
    }, interval);
  }

  /** Sends the queue in order while the connection of `generation` lasts. */
  async #pump(generation: number, connector: Connector): Promise<void> {
    const queue = this.#o.queue;
    const window = Number(this.#o.config.maxInflight ?? 1000);
    // A pipelined connector refills its window in eighths (not in batches of 500 out of 1,000):
    // each acknowledged batch makes room for the next at once, so the window stays nearly full.
    const batchDefault = connector.pipelined ? Math.min(DEFAULT_BATCH, Math.ceil(window / 8)) : DEFAULT_BATCH;
    const batchSize = Math.max(1, Math.min(window, Number(this.#o.config.batchSize ?? batchDefault)));
    const inflight: { done: Promise<void>; last: number; n: number }[] = [];
    let cursor = 0;
    let inflightCount = 0;
    const alive = () => generation === this.#generation && !this.#stopped;
    this.#live = connector;
    this.#inflight = 0;
    try {
      while (alive()) {
        let batch: OutMessage[] = [];
        if (inflightCount < window && (connector.pipelined || inflight.length === 0)) {
          queue.flush();
          batch = queue.read(cursor, Math.min(batchSize, window - inflightCount));
        }
        if (batch.length > 0) {
          cursor = batch[batch.length - 1]!.seq;
          const done = connector.send(batch);
          done.catch(() => undefined);
          inflight.push({ done, last: cursor, n: batch.length });
          inflightCount += batch.length;
          this.#inflight = inflightCount;
          continue;
        }
        const head = inflight.shift();
        if (head) {
          await head.done;
          if (!alive()) return;
          inflightCount -= head.n;
          this.#inflight = inflightCount;
          queue.ack(head.last);
          this.counters.sent += head.n;
          continue;
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } catch (err) {
      if (generation === this.#generation) this.#down(reasonOf(err));
    }
  }

  #fromRemote(subscriptionId: string, topic: string, payload: Buffer): void {
    const s = this.#o.subscriptions.find((x) => x.id === subscriptionId);
    if (!s || this.#stopped) return;
    let value: unknown;
    let subject = '';
    try {
      value = JSON.parse(payload.toString('utf8'));
      subject = localSubject(s.localName, topic);
      if (!isValidSubject(subject)) throw new Error(`"${subject}" is not a valid DataHub subject`);
    } catch (err) {
      this.counters.malformed++;
      if (this.#malformedLogged++ % 1000 === 0) {
        this.#log.warn(
          {
            instance: this.#o.instanceId,
            topic,
            bytes: payload.length,
            err: reasonOf(err),
            malformed: this.counters.malformed,
          },
          'integration: malformed message from the remote, not forwarded',
        );
      }
      return;
    }
    this.counters.received++;
    this.#o.hub.publish(subject, value, { origin: this });
  }

  /** Stops everything; the queue file is closed by the owner. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#generation++;
    this.#live = undefined;
    if (this.#timer) clearTimeout(this.#timer);
    for (const s of this.#subs) s.unsubscribe();
    this.#subs = [];
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
    const c = this.#connector;
    this.#connector = undefined;
    await c?.close().catch(() => undefined);
    if (this.machine.state !== 'Disabled') this.machine.move('Disabled', 'stopped');
    this.#o.queue.flush();
  }
}
