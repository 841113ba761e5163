/**
 * What a connector is: one transport to one remote. The instance runner owns the state machine,
 * the queue and the DataHub side; a connector only connects, sends batches (resolving once the
 * remote acknowledged every message of the batch) and hands over what arrives from the remote.
 */
import type { Logger } from 'pino';
import type { ProviderDef } from '../catalogue.js';
import type { InstanceConfig } from '../validation.js';

export interface OutMessage {
  seq: number;
  ts: number;
  topic: string;
  subject: string;
  payload: Buffer;
}

/** A remote-to-local subscription as the connector sees it. */
export interface RemoteSubscription {
  id: string;
  /** Topic filter / subject / queue / stream, as the remote names it. */
  remote: string;
  config: Record<string, unknown>;
}

export interface ConnectorHooks {
  /** A message from the remote for subscription `subscriptionId`. */
  message(subscriptionId: string, remoteTopic: string, payload: Buffer): void;
  /** The connection broke after `connect` succeeded. */
  down(reason: string): void;
}

export interface ConnectorContext {
  instanceId: string;
  provider: ProviderDef;
  config: InstanceConfig;
  logger: Logger;
  hooks: ConnectorHooks;
  /**
   * The edge's trust store: the system's roots and the CA certificates the manager synchronised
   * (undefined while there are none), for a connection whose configuration names no CA.
   */
  trustedCa?: () => string[] | undefined;
}

export interface Connector {
  /** Opens the connection; rejects with an error whose message is the reason for people. */
  connect(remoteSubscriptions: RemoteSubscription[]): Promise<void>;
  /** Sends messages in order; resolves once the remote acknowledged all of them. */
  send(batch: OutMessage[]): Promise<void>;
  /**
   * Fire-and-forget, for transports without acknowledgements (MQTT QoS 0): sends at once when the
   * link takes it without buffering, answering false (nothing sent) otherwise. Absent: always queue.
   */
  trySend?(topic: string, payload: Buffer): boolean;
  /** Closes the connection (idempotent). */
  close(): Promise<void>;
  /** How local-to-remote topics are written: MQTT topics use `/` between levels, others `.`. */
  readonly separator: '/' | '.';
  /**
   * Whether several batches may be in flight at once (an ordered stream: MQTT, NATS, AMQP,
   * Redis). False for request/response transports (HTTP, SQL transactions): one batch at a time,
   * so that a failed batch is never overtaken by a later one.
   */
  readonly pipelined: boolean;
}

export type ConnectorFactory = (ctx: ConnectorContext) => Connector;

/** An error message for people, from whatever a client library threw. */
export function reasonOf(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return reasonOf(err.errors[0]);
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return code && typeof code === 'string' && !err.message.includes(code)
      ? `${code}: ${err.message}`
      : err.message;
  }
  return String(err);
}
