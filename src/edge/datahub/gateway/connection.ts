/**
 * One client connection of the NATS gateway: its state (CONNECT options, access grant,
 * subscriptions, counters) and its life (authentication timer, errors, close). The work is done
 * by its parts:
 * - `parser.ts`: the byte parser of the client protocol;
 * - `handlers/`: one handler per protocol operation (CONNECT, PUB, HPUB, SUB, UNSUB, PING/PONG),
 *   chosen by the op switch in `handlers/index.ts`;
 * - `writer.ts`: gathers outgoing bytes per event-loop turn, MSG encoding, slow consumers;
 * - `permissions.ts`: what the access key allows.
 *
 * The fields below are shared with those parts (they are the connection's internals, not an API).
 */
import type { Socket } from 'node:net';
import type { Message, Subscription } from '../bus.js';
import { Parser } from './parser.js';
import { Permissions } from './permissions.js';
import { ERR, PING, errLine } from './protocol.js';
import type { AccessGrant, GatewayCore } from './server.js';
import { Writer } from './writer.js';

/** What a subscription of a connection carries (its `owner` on the bus). */
export interface SubContext {
  sid: string;
  sidBytes: Buffer;
}

export interface ConnectionInfo {
  cid: number;
  name: string;
  lang: string;
  version: string;
  address: string;
  local: boolean;
  tls: boolean;
  accessKey: { id: string; name: string } | null;
  connectedAt: string;
  subscriptions: { sid: string; subject: string; queue?: string; received: number }[];
  msgsIn: number;
  bytesIn: number;
  msgsOut: number;
  bytesOut: number;
  pendingBytes: number;
}

export class Connection {
  readonly cid: number;
  readonly socket: Socket;
  readonly address: string;
  readonly local: boolean;
  readonly tls: boolean;
  readonly connectedAt = Date.now();
  readonly core: GatewayCore;
  readonly subs = new Map<string, Subscription>();
  /** The bus callback of every subscription of this connection. */
  readonly onMsg: (msg: Message, sub: Subscription) => void;
  readonly parser: Parser;
  readonly writer: Writer;
  readonly permissions = new Permissions();

  // CONNECT state
  connected = false;
  verbose = false;
  pedantic = false;
  echo = true;
  headers = false;
  noResponders = false;
  name = '';
  lang = '';
  version = '';
  grant: AccessGrant | null = null;
  readonly needsAuth: boolean;
  #authTimer: NodeJS.Timeout | undefined;

  // counters
  msgsIn = 0;
  bytesIn = 0;
  msgsOut = 0;
  bytesOut = 0;
  pingsOut = 0;

  closed = false;

  constructor(core: GatewayCore, socket: Socket, cid: number, address: string, local: boolean, tls: boolean) {
    this.core = core;
    this.socket = socket;
    this.cid = cid;
    this.address = address;
    this.local = local;
    this.tls = tls;
    this.needsAuth = !local;
    this.parser = new Parser(this, core.maxControlLine);
    this.writer = new Writer(this);
    this.onMsg = (msg, sub) => this.writer.writeMsg(sub, msg);
    if (this.needsAuth && core.authTimeout > 0) {
      this.#authTimer = setTimeout(() => this.fail(ERR.authTimeout), core.authTimeout);
      this.#authTimer.unref();
    }
  }

  onData(chunk: Buffer): void {
    if (this.closed) return;
    this.pingsOut = 0;
    this.parser.onData(chunk);
  }

  /** False (and the connection failed) when a remote client sends an operation before CONNECT. */
  authorised(): boolean {
    if (this.needsAuth && !this.connected) {
      this.core.authFailed(this, 'protocol before CONNECT');
      this.fail(ERR.authViolation);
      return false;
    }
    return true;
  }

  clearAuthTimer(): void {
    if (this.#authTimer) clearTimeout(this.#authTimer);
    this.#authTimer = undefined;
  }

  /** Malformed arguments: nats-server closes such a connection without a word, and so do we. */
  protocolError(): boolean {
    this.core.protocolError(this, 'malformed arguments');
    this.close('malformed arguments', true);
    return false;
  }

  /** Writes what was gathered since the last flush (called by the gateway once per turn). */
  flush(): void {
    this.writer.flush();
  }

  /** Bytes written but not yet taken by the peer. */
  get pendingBytes(): number {
    return this.writer.gathered + (this.socket.writableLength ?? 0);
  }

  /** Cuts the connection as a slow consumer (`msg`: the message that did not fit, if any). */
  slowConsumer(msg: Message | undefined): void {
    if (this.closed) return;
    // What is gathered but not written is dropped; the error goes behind what the socket holds.
    this.writer.drop();
    if (msg) {
      msg.counters.drops++;
      msg.counters.slowConsumers++;
    }
    this.core.slowConsumer(this, msg?.subject);
    this.fail(ERR.slowConsumer);
  }

  /** Sends `-ERR '<text>'` and closes the connection. */
  fail(text: string): void {
    if (this.closed) return;
    this.writer.write(errLine(text));
    this.writer.flush();
    this.core.protocolError(this, text);
    this.close(text, true);
  }

  sendPing(): void {
    this.pingsOut++;
    this.writer.write(PING);
  }

  /** Closes the connection; `graceful` lets written bytes go out first (at most the grace time). */
  close(reason: string, graceful = false): void {
    if (this.closed) return;
    this.closed = true;
    this.clearAuthTimer();
    for (const s of this.subs.values()) s.unsubscribe();
    this.subs.clear();
    this.core.closed(this, reason);
    if (graceful) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), this.core.closeGrace).unref();
    } else {
      this.socket.destroy();
    }
  }

  info(): ConnectionInfo {
    return {
      cid: this.cid,
      name: this.name,
      lang: this.lang,
      version: this.version,
      address: this.address,
      local: this.local,
      tls: this.tls,
      accessKey: this.grant ? { id: this.grant.keyId, name: this.grant.name } : null,
      connectedAt: new Date(this.connectedAt).toISOString(),
      subscriptions: [...this.subs.values()].map((s) => ({
        sid: (s.owner as SubContext).sid,
        subject: s.pattern,
        ...(s.queue === undefined ? {} : { queue: s.queue }),
        received: s.received,
      })),
      msgsIn: this.msgsIn,
      bytesIn: this.bytesIn,
      msgsOut: this.msgsOut,
      bytesOut: this.bytesOut,
      pendingBytes: this.pendingBytes,
    };
  }

  get subscriptionCount(): number {
    return this.subs.size;
  }
}
