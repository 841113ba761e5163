/**
 * The node-opcua server of the edge, run in a worker thread (ua-worker.ts): loading node-opcua,
 * its standard nodeset and an address space of 10,000 tags take seconds of CPU, which on the
 * main thread stalled HTTP, the DataHub and acquisition. This side of it lives on the main thread:
 * it sends the node tree (in chunks) and the DataHub's tag values (batched), answers the worker's
 * user checks and writes (the tag's Command subject; the driver's answer is the status code), and
 * says where the server is in its start (`state`: `starting` until it listens and its address
 * space holds the tree, then `ready`).
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import {
  NoRespondersError,
  RequestTimeoutError,
  type DataHub,
  type Message,
  type Subscription,
} from '../datahub/index.js';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { listCertificates, ownCertificatePem } from './certificates.js';
import type { AddressSpaceSink, OpcuaService } from './service.js';
import type { NodeTree } from './tree.js';
import type {
  FromWorker,
  ToWorker,
  UaFolders,
  UaRpc,
  UaValueBatch,
  UaWorkerData,
  UaWriteStatus,
} from './ua-protocol.js';
import type { CertificateGroup, CertificateInfo } from './types.js';

export { uaDataType } from './data-types.js';

/** How long a write waits for the driver's answer. */
const WRITE_TIMEOUT_MS = 10_000;
/** Nodes per message when the tree is sent to the worker (each message a short copy). */
const TREE_CHUNK = 2000;
/** Values gathered before they are sent to the worker (they are sent at least every tick). */
const VALUE_BATCH = 5000;

const emptyBatch = (): UaValueBatch => ({ registerIds: [], values: [], success: [], timestamps: [] });

/** Where the server is: starting (node-opcua loading, address space being built), ready, failed, stopped. */
export type UaServerState = 'starting' | 'ready' | 'failed' | 'stopped';

export interface UaServerOptions {
  port: number;
  host: string;
  /** The server's PKI: own certificate, trusted and rejected client certificates. */
  pkiDir: string;
  service: OpcuaService;
  hub: DataHub;
  logger?: Logger;
  productUri?: string;
  buildVersion?: string;
  /** Called once node-opcua is loaded, just before the server binds `port` (the reservation is released). */
  beforeBind?: () => Promise<void>;
}

export class UaServer implements AddressSpaceSink {
  readonly #worker: Worker;
  readonly #service: OpcuaService;
  readonly #hub: DataHub;
  readonly #log: Logger | undefined;
  readonly #sub: Subscription;
  #state: UaServerState = 'starting';
  #error: string | null = null;
  #port: number;
  #endpointUrl: string;
  #folders: UaFolders | null = null;
  /** The tree last sent, its sequence number, and the one the address space holds. */
  #sent = 0;
  #reconciled = 0;
  #nodes = 0;
  #sending = false;
  #latest: NodeTree | null = null;
  #values: UaValueBatch = emptyBatch();
  #flush: NodeJS.Immediate | undefined;
  #nextId = 1;
  readonly #calls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly #listening: Promise<void>;
  readonly #readyWaiters = new Set<() => void>();
  /** When the start began, and how long it took to be ready (ms). */
  readonly #t0 = performance.now();
  startMs: number | null = null;

  private constructor(options: UaServerOptions) {
    this.#service = options.service;
    this.#hub = options.hub;
    this.#log = options.logger;
    this.#port = options.port;
    const host = options.host === '0.0.0.0' ? 'localhost' : options.host;
    this.#endpointUrl = `opc.tcp://${host}:${options.port}`;
    const data: UaWorkerData = {
      port: options.port,
      host: options.host,
      pkiDir: options.pkiDir,
      settings: options.service.settings,
      productUri: options.productUri ?? 'urn:millwright:edge:opcua',
      buildVersion: options.buildVersion ?? '0',
    };
    this.#worker = new Worker(new URL('./ua-worker.js', import.meta.url), { workerData: data });
    this.#worker.unref();
    this.#listening = new Promise<void>((resolve, reject) => {
      this.#worker.on('message', (m: FromWorker) => {
        if (m.t === 'bind') {
          void (options.beforeBind?.() ?? Promise.resolve()).then(() => this.#post({ t: 'bind' }));
        } else if (m.t === 'listening') {
          this.#port = m.port;
          this.#endpointUrl = m.endpointUrl;
          this.#folders = m.folders;
          resolve();
        } else if (m.t === 'failed') {
          this.#fail(m.error);
          reject(new Error(m.error));
        } else this.#onMessage(m);
      });
      this.#worker.on('error', (err) => {
        this.#fail(err.message);
        reject(err);
      });
      this.#worker.on('exit', (code) => {
        if (this.#state !== 'stopped') this.#fail(`the OPC UA server's worker exited (${code})`);
        reject(new Error(`the OPC UA server's worker exited (${code})`));
      });
    });
    this.#listening.catch(() => undefined);
    this.#sub = options.hub.subscribe('devicehub.raw.>', (msg) => this.#onValue(msg));
  }

  /**
   * Starts the server in its worker and answers at once (state `starting`); `listening()` resolves
   * once it accepts connections, `ready()` once its address space holds the node tree.
   */
  static start(options: UaServerOptions): UaServer {
    const ua = new UaServer(options);
    options.service.attach(ua);
    options.service.onSettings((s) => ua.#post({ t: 'settings', settings: s }));
    return ua;
  }

  get state(): UaServerState {
    return this.#state;
  }

  /** Why the start failed (state `failed`). */
  get error(): string | null {
    return this.#error;
  }

  /** Nodes in the address space (of the tree last built). */
  get nodes(): number {
    return this.#nodes;
  }

  get port(): number {
    return this.#port;
  }

  get endpointUrl(): string {
    return this.#endpointUrl;
  }

  /** Resolves once the server accepts connections; rejects when its start failed. */
  listening(): Promise<void> {
    return this.#listening;
  }

  /** Resolves once the server is `ready` (or its start failed, or it stopped). */
  ready(): Promise<void> {
    if (this.#state !== 'starting') return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.add(resolve));
  }

  #settle(state: UaServerState): void {
    this.#state = state;
    for (const w of this.#readyWaiters) w();
    this.#readyWaiters.clear();
  }

  #fail(error: string): void {
    if (this.#state === 'stopped' || this.#state === 'failed') return;
    this.#error = error;
    this.#log?.error({ error }, 'opcua server failed');
    this.#settle('failed');
  }

  #post(m: ToWorker): void {
    if (this.#state === 'stopped') return;
    this.#worker.postMessage(m);
  }

  async shutdown(): Promise<void> {
    this.#sub.unsubscribe();
    this.#service.onSettings(undefined);
    this.#service.attach(null);
    clearImmediate(this.#flush);
    // The worker's own shutdown gets 5 s at most: a worker that does not answer is terminated anyway,
    // so that the edge's stop never waits for it.
    if (this.#state !== 'failed' && this.#folders) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000)));
      await Promise.race([this.#rpc({ op: 'shutdown' }).catch(() => undefined), late]);
      clearTimeout(timer);
    }
    this.#settle('stopped');
    await this.#worker.terminate();
    for (const c of this.#calls.values()) c.reject(new Error('the OPC UA server stopped'));
    this.#calls.clear();
  }

  // --- the worker's questions and answers

  #onMessage(m: FromWorker): void {
    switch (m.t) {
      case 'reconciled':
        this.#reconciled = m.seq;
        this.#nodes = m.nodes;
        if (m.seq === this.#sent && this.#state === 'starting') {
          this.startMs = performance.now() - this.#t0;
          this.#log?.info({ nodes: m.nodes, ms: Math.round(this.startMs) }, 'opcua address space ready');
          this.#settle('ready');
        }
        return;
      case 'log':
        this.#log?.[m.level](m.data, m.msg);
        return;
      case 'user':
        void this.#service.checkUser(m.username, m.password).then(
          (ok) => this.#post({ t: 'user', id: m.id, ok }),
          () => this.#post({ t: 'user', id: m.id, ok: false }),
        );
        return;
      case 'write':
        void this.#write(m.tagId, m.value).then(
          (status) => this.#post({ t: 'written', id: m.id, status }),
          (err: unknown) => {
            this.#log?.warn({ err, tagId: m.tagId }, 'opcua write failed');
            this.#post({ t: 'written', id: m.id, status: 'BadInternalError' });
          },
        );
        return;
      case 'rpc': {
        const call = this.#calls.get(m.id);
        this.#calls.delete(m.id);
        if (m.ok) call?.resolve(m.value);
        else {
          const code = m.status === 404 ? ERRORS.notFound : ERRORS.badRequest;
          call?.reject(new AppError(code, m.error));
        }
        return;
      }
    }
  }

  #rpc<T>(call: UaRpc): Promise<T> {
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#post({ t: 'rpc', id, call });
    });
  }

  async #write(tagId: string, value: unknown): Promise<UaWriteStatus> {
    const tag = await this.#service.originTag(tagId);
    if (!tag) return 'BadNodeIdUnknown';
    try {
      const reply = await this.#hub.request(
        `devicehub.command.${tag.deviceName}.${tag.tagName}`,
        { value },
        { timeout: WRITE_TIMEOUT_MS },
      );
      const answer = reply.json<{ success?: boolean; error?: string }>();
      if (answer.success === true) return 'Good';
      this.#log?.info({ tagId, error: answer.error }, 'opcua write refused by the driver');
      if (typeof answer.error === 'string' && answer.error.startsWith('no running tag'))
        return 'BadNoCommunication';
      return 'BadDeviceFailure';
    } catch (err) {
      if (err instanceof NoRespondersError) return 'BadNotConnected';
      if (err instanceof RequestTimeoutError) return 'BadTimeout';
      throw err;
    }
  }

  // --- live values, batched

  #onValue(msg: Message): void {
    const p = msg.data as Record<string, unknown> | null;
    if (!p || typeof p !== 'object' || Buffer.isBuffer(p)) return;
    const registerId = p.registerId;
    if (typeof registerId !== 'string') return;
    const b = this.#values;
    b.registerIds.push(registerId);
    b.values.push(p.value);
    b.success.push(p.success !== false);
    b.timestamps.push(typeof p.timestamp === 'number' ? p.timestamp : NaN);
    if (b.registerIds.length >= VALUE_BATCH) this.#sendValues();
    else this.#flush ??= setImmediate(() => this.#sendValues());
  }

  #sendValues(): void {
    clearImmediate(this.#flush);
    this.#flush = undefined;
    if (this.#values.registerIds.length === 0) return;
    const batch = this.#values;
    this.#values = emptyBatch();
    try {
      this.#post({ t: 'values', batch });
    } catch (err) {
      this.#log?.warn({ err }, 'opcua values not passed to the server');
    }
  }

  // --- the address space

  /** Sends the tree to the worker in chunks, one per tick; the newest tree wins. */
  reconcile(tree: NodeTree): void {
    this.#latest = tree;
    if (!this.#sending) void this.#sendTree();
  }

  async #sendTree(): Promise<void> {
    this.#sending = true;
    try {
      while (this.#latest) {
        const tree = this.#latest;
        this.#latest = null;
        const seq = ++this.#sent;
        this.#post({ t: 'tree-begin', seq });
        let chunk = [];
        for (const node of tree.all()) {
          chunk.push(node);
          if (chunk.length < TREE_CHUNK) continue;
          this.#post({ t: 'tree-chunk', nodes: chunk });
          chunk = [];
          await new Promise((r) => setImmediate(r));
        }
        this.#post({ t: 'tree-chunk', nodes: chunk });
        this.#post({ t: 'tree-end', seq });
      }
    } catch (err) {
      this.#log?.warn({ err }, 'opcua tree not passed to the server');
    } finally {
      this.#sending = false;
    }
  }

  /** Whether the address space holds the tree last sent. */
  get inLine(): boolean {
    return this.#reconciled === this.#sent && !this.#sending;
  }

  // --- certificates

  #foldersOrThrow(): UaFolders {
    if (!this.#folders) throw new AppError(ERRORS.opcuaServerNotRunning, 'the OPC UA server is starting');
    return this.#folders;
  }

  /** Client certificates of a group (files in the PKI's trusted/certs or rejected folder). */
  listCertificates(group?: CertificateGroup | null): CertificateInfo[] {
    if (!this.#folders) return [];
    return listCertificates(this.#folders, group, (data, msg) => this.#log?.warn(data, msg));
  }

  /** Moves a client certificate to `to` (Trusted: its sessions are accepted; Rejected: refused). */
  moveCertificate(thumbprint: string, to: CertificateGroup): Promise<CertificateInfo> {
    this.#foldersOrThrow();
    return this.#rpc<CertificateInfo>({ op: 'move', thumbprint, to });
  }

  deleteCertificate(thumbprint: string): Promise<boolean> {
    this.#foldersOrThrow();
    return this.#rpc<boolean>({ op: 'delete', thumbprint });
  }

  /** The server's own certificate (PEM), made on first start. */
  ownCertificatePem(): string | null {
    return this.#folders ? ownCertificatePem(this.#folders) : null;
  }

  /** The server's session limit as node-opcua holds it (for tests). */
  maxSessions(): Promise<number> {
    return this.#rpc<number>({ op: 'maxSessions' });
  }
}
