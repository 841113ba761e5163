/**
 * The async persistence interface aedes calls (aedes-persistence 11), with the shapes it passes:
 * `SqlPersistence` and the Redis persistence implement it.
 */
import type { Readable } from 'node:stream';

export type Packet = Record<string, unknown> & {
  topic: string;
  payload: Buffer | string;
  messageId?: number;
};
export interface ClientRef {
  id: string;
}
export interface Sub {
  topic: string;
  qos: number;
  [k: string]: unknown;
}

/** The async persistence interface aedes 1.x calls (aedes-persistence 11). */
export interface AsyncPersistence {
  setup(broker: { id: string; [key: string]: unknown }): Promise<void>;
  storeRetained(packet: Packet): Promise<void>;
  createRetainedStream(pattern: string): Readable;
  createRetainedStreamCombi(patterns: string[]): Readable;
  addSubscriptions(client: ClientRef, subs: Sub[]): Promise<void>;
  removeSubscriptions(client: ClientRef, topics: string[]): Promise<void>;
  subscriptionsByClient(client: ClientRef): Promise<Sub[]>;
  countOffline(): Promise<{ subsCount: number; clientsCount: number }>;
  subscriptionsByTopic(topic: string): Promise<unknown[]>;
  cleanSubscriptions(client: ClientRef): Promise<void>;
  outgoingEnqueue(sub: { clientId: string }, packet: Packet): Promise<void>;
  outgoingEnqueueCombi(subs: { clientId: string }[], packet: Packet): Promise<void>;
  outgoingUpdate(client: ClientRef, packet: Packet): Promise<unknown>;
  outgoingClearMessageId(client: ClientRef, packet: Packet): Promise<Packet | undefined>;
  outgoingStream(client: ClientRef): Readable;
  incomingStorePacket(client: ClientRef, packet: Packet): Promise<void>;
  incomingGetPacket(client: ClientRef, packet: Packet): Promise<Packet>;
  incomingDelPacket(client: ClientRef, packet: Packet): Promise<void>;
  cleanIncoming?(client: ClientRef): Promise<void>;
  putWill(client: ClientRef, packet: Packet): Promise<void>;
  getWill(client: ClientRef): Promise<Packet | undefined>;
  delWill(client: ClientRef): Promise<Packet | undefined>;
  streamWill(brokers?: Record<string, number>): Readable;
  getClientList(topic: string): Readable;
  destroy(): Promise<void>;
}
