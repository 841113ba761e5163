/**
 * The connections of the targets. A transport sends a batch and says, by resolving, that the
 * batch left: for HTTP that the receiver answered 2xx (an acknowledgement), for UDP that the
 * datagrams were sent, for TCP and TLS that the bytes were handed to the kernel (syslog has no
 * acknowledgement: the forwarder keeps a resend window, see `forwarder.ts`). A stream transport
 * reports its end (`onClose`), so that the forwarder notices a receiver that went away while idle.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect as netConnect, type Socket } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { Agent } from 'undici';
import type { ForwardingTarget, HttpTarget, SyslogTarget, TlsSettings } from './config.js';
import { jsonLine, octetCounted, syslogMessage, type QueuedEntry } from './format.js';

export interface Outgoing {
  seq: number;
  entry: QueuedEntry;
}

export interface Transport {
  /** Whether entries are done once `send` resolves (HTTP: acknowledged; UDP: nothing more can be known); else the resend window. */
  readonly acknowledged: boolean;
  send(batch: Outgoing[]): Promise<void>;
  /** Set by the forwarder: the connection ended or failed on its own. */
  onClose: ((err: Error) => void) | undefined;
  close(): void;
}

const CONNECT_TIMEOUT_MS = 10_000;
const HTTP_TIMEOUT_MS = 30_000;

function tlsOptions(
  tls: TlsSettings | undefined,
  host: string,
  trustedCa: string[] | undefined,
): ConnectionOptions {
  // A target's own CA wins; else the edge's trust store (the system's roots and the CA
  // certificates synchronised by the manager), else Node's defaults.
  const ca = tls?.ca ?? trustedCa;
  return {
    ...(ca ? { ca } : {}),
    ...(tls?.cert ? { cert: tls.cert } : {}),
    ...(tls?.key ? { key: tls.key } : {}),
    servername: tls?.serverName ?? host,
    rejectUnauthorized: !tls?.insecureSkipVerify,
  };
}

/** Opens the transport of `target`; rejects when it cannot connect. */
export async function openTransport(target: ForwardingTarget, trustedCa?: string[]): Promise<Transport> {
  // undici is loaded by the first HTTP target (it is large, and most edges forward no logs).
  if (target.type === 'http') return new HttpTransport(await import('undici'), target, trustedCa);
  if (target.protocol === 'udp') return UdpTransport.open(target);
  return StreamTransport.open(target, trustedCa);
}

class StreamTransport implements Transport {
  readonly acknowledged = false;
  onClose: ((err: Error) => void) | undefined;
  #error: Error | null = null;

  private constructor(
    private readonly socket: Socket,
    private readonly target: SyslogTarget,
  ) {
    const closed = (err: Error) => {
      if (this.#error) return;
      this.#error = err;
      this.onClose?.(err);
    };
    socket.on('error', closed);
    socket.on('end', () => closed(new Error('the receiver closed the connection')));
    socket.on('close', () => closed(new Error('the connection closed')));
    socket.on('data', () => undefined); // a syslog receiver sends nothing; reading notices its end
  }

  static open(target: SyslogTarget, trustedCa: string[] | undefined): Promise<StreamTransport> {
    return new Promise((resolve, reject) => {
      const socket =
        target.protocol === 'tls'
          ? tlsConnect({
              host: target.host,
              port: target.port,
              ...tlsOptions(target.tls, target.host, trustedCa),
            })
          : netConnect({ host: target.host, port: target.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connecting to ${target.host}:${target.port} timed out`));
      }, CONNECT_TIMEOUT_MS);
      const fail = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      socket.once('error', fail);
      socket.once(target.protocol === 'tls' ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.off('error', fail);
        socket.setKeepAlive(true, 10_000);
        socket.setNoDelay(true);
        resolve(new StreamTransport(socket, target));
      });
    });
  }

  send(batch: Outgoing[]): Promise<void> {
    if (this.#error) return Promise.reject(this.#error);
    const data = Buffer.concat(batch.map((o) => octetCounted(syslogMessage(o.entry, o.seq, this.target))));
    return new Promise((resolve, reject) => {
      const more = this.socket.write(data, (err) => (err ? reject(err) : more ? resolve() : undefined));
      if (!more) {
        // Backpressure: resolve once the kernel took the bytes and the socket drained.
        const done = () => {
          this.socket.off('close', closed);
          resolve();
        };
        const closed = () => {
          this.socket.off('drain', done);
          reject(this.#error ?? new Error('the connection closed'));
        };
        this.socket.once('drain', done);
        this.socket.once('close', closed);
      }
    });
  }

  close(): void {
    this.#error ??= new Error('closed');
    this.socket.destroy();
  }
}

class UdpTransport implements Transport {
  readonly acknowledged = true;
  onClose: ((err: Error) => void) | undefined;

  private constructor(
    private readonly socket: UdpSocket,
    private readonly target: SyslogTarget,
  ) {
    socket.on('error', (err) => this.onClose?.(err));
  }

  static open(target: SyslogTarget): Promise<UdpTransport> {
    const socket = createSocket(target.host.includes(':') ? 'udp6' : 'udp4');
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(target.port, target.host, () => {
        socket.off('error', reject);
        resolve(new UdpTransport(socket, target));
      });
    });
  }

  async send(batch: Outgoing[]): Promise<void> {
    for (const o of batch) {
      const msg = Buffer.from(syslogMessage(o.entry, o.seq, this.target), 'utf8');
      await new Promise<void>((resolve, reject) =>
        this.socket.send(msg, (err) => (err ? reject(err) : resolve())),
      );
    }
  }

  close(): void {
    try {
      this.socket.close();
    } catch {
      // closed already
    }
  }
}

type Undici = typeof import('undici');

class HttpTransport implements Transport {
  readonly acknowledged = true;
  onClose: ((err: Error) => void) | undefined;
  readonly #agent: Agent;
  readonly #request: Undici['request'];
  readonly #host = osHostname();

  constructor(
    undici: Undici,
    private readonly target: HttpTarget,
    private readonly trustedCa: string[] | undefined,
  ) {
    const url = new URL(target.url);
    this.#request = undici.request;
    this.#agent = new undici.Agent({
      connect: { ...tlsOptions(target.tls, url.hostname, this.trustedCa), timeout: CONNECT_TIMEOUT_MS },
      headersTimeout: HTTP_TIMEOUT_MS,
      bodyTimeout: HTTP_TIMEOUT_MS,
    });
  }

  async send(batch: Outgoing[]): Promise<void> {
    const body = batch.map((o) => `${jsonLine(o.entry, o.seq, this.#host)}\n`).join('');
    const res = await this.#request(this.target.url, {
      method: 'POST',
      headers: { ...this.target.headers, 'content-type': 'application/x-ndjson' },
      body,
      dispatcher: this.#agent,
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299)
      throw new Error(`the receiver answered ${res.statusCode}: ${text.slice(0, 200)}`);
  }

  close(): void {
    this.#agent.destroy().catch(() => undefined); // an edge that stops does not wait for a slow receiver
  }
}
