/**
 * The OPC UA server's worker thread: node-opcua's server, its address space built from the node
 * tree the main thread sends (folders, devices, tags under Objects) in slices of at most
 * `SLICE_MS` so that OPC UA clients are answered meanwhile, tag values from the main thread's
 * DataHub subscription, and the server's certificate store. Writes and user checks are asked of
 * the main thread (the DataHub and the users live there). Protocol: ua-protocol.ts.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type {
  DataValue,
  Namespace,
  OPCUAServer,
  StatusCode,
  UAObject,
  UAVariable,
  Variant,
} from 'node-opcua';
import { certificateFolder, listCertificates } from './certificates.js';
import { NodeTree, uaNodeId } from './tree.js';
import type {
  FromWorker,
  ToWorker,
  UaFolders,
  UaRpc,
  UaValue,
  UaWorkerData,
  UaWriteStatus,
} from './ua-protocol.js';
import { batchValues } from './ua-protocol.js';
import type { OpcuaNode } from './types.js';
import { uaDataType } from './data-types.js';
import { loadNodeOpcua } from '../../kernel/node-opcua.js';

type Opcua = typeof import('node-opcua');

/** Longest run of address-space work before the worker yields to its clients. */
const SLICE_MS = 20;

interface Mounted {
  node: OpcuaNode;
  path: string;
  ua: UAObject | UAVariable;
}

const port = parentPort!;
const send = (m: FromWorker) => port.postMessage(m);
const log = (level: 'debug' | 'info' | 'warn' | 'error', data: Record<string, unknown>, msg: string) =>
  send({ t: 'log', level, msg, data });
const yieldNow = () => new Promise<void>((r) => setImmediate(r));

class RpcError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

class UaWorker {
  readonly #o: Opcua;
  readonly server: OPCUAServer;
  readonly #ns: Namespace;
  readonly #folders: UaFolders;
  readonly #certs: InstanceType<Opcua['OPCUACertificateManager']>;
  readonly #mounted = new Map<string, Mounted>();
  readonly #byTag = new Map<string, Set<UAVariable>>();
  readonly #last = new Map<string, UaValue>();
  /** The newest tree from the main thread, and the sequence number it came with. */
  #want: { tree: NodeTree; seq: number } | null = null;
  #building = false;
  #nextId = 1;
  readonly #pending = new Map<number, (answer: unknown) => void>();

  constructor(o: Opcua, server: OPCUAServer, certs: InstanceType<Opcua['OPCUACertificateManager']>) {
    this.#o = o;
    this.server = server;
    this.#certs = certs;
    this.#ns = server.engine.addressSpace!.getOwnNamespace();
    this.#folders = {
      trusted: certs.trustedFolder,
      rejected: certs.rejectedFolder,
      own: certs.ownCertFolder,
    };
  }

  get folders(): UaFolders {
    return this.#folders;
  }

  /** Asks the main thread; the answer comes back as a `user` or `written` message. */
  ask<T>(m: (id: number) => FromWorker): Promise<T> {
    const id = this.#nextId++;
    return new Promise<T>((resolve) => {
      this.#pending.set(id, resolve as (a: unknown) => void);
      send(m(id));
    });
  }

  answered(id: number, answer: unknown): void {
    const resolve = this.#pending.get(id);
    this.#pending.delete(id);
    resolve?.(answer);
  }

  // --- live values

  values(values: Iterable<UaValue>): void {
    for (const p of values) {
      this.#last.set(p.registerId, p);
      const vars = this.#byTag.get(p.registerId);
      if (vars) for (const v of vars) this.#setValue(v, p);
    }
  }

  #setValue(v: UAVariable, p: UaValue): void {
    const o = this.#o;
    const dataType = v.dataTypeObj.basicDataType;
    const ts = typeof p.timestamp === 'number' ? new Date(p.timestamp) : new Date();
    let status: StatusCode = p.success === false ? o.StatusCodes.Bad : o.StatusCodes.Good;
    let variant: Variant;
    if (p.success === false) {
      // A failed read keeps the last value, with a Bad status.
      variant = v.readValue().value;
    } else {
      try {
        variant = new o.Variant({ dataType, value: coerce(o, dataType, p.value) });
      } catch {
        variant = v.readValue().value;
        status = o.StatusCodes.BadTypeMismatch;
      }
    }
    v.setValueFromSource(variant, status, ts);
  }

  // --- the address space, in slices

  /** Takes a new tree; the address space is brought in line with the newest one. */
  want(tree: NodeTree, seq: number): void {
    this.#want = { tree, seq };
    if (!this.#building) void this.#build();
  }

  async #build(): Promise<void> {
    this.#building = true;
    try {
      while (this.#want) {
        const { tree, seq } = this.#want;
        const t0 = performance.now();
        const done = await this.#reconcile(tree);
        if (done && this.#want?.seq === seq) {
          this.#want = null;
          send({ t: 'reconciled', seq, nodes: this.#mounted.size, ms: performance.now() - t0 });
        }
      }
    } catch (err) {
      log('error', { err: String(err) }, 'opcua address space not built');
    } finally {
      this.#building = false;
    }
  }

  /** One pass; false when a newer tree arrived meanwhile (the next pass starts from here). */
  async #reconcile(tree: NodeTree): Promise<boolean> {
    const want = new Map<string, { node: OpcuaNode; path: string }>();
    for (const node of tree.ordered()) want.set(node.ref, { node, path: tree.path(node.ref) });
    let slice = performance.now();
    const pause = async () => {
      if (performance.now() - slice < SLICE_MS) return false;
      await yieldNow();
      slice = performance.now();
      return this.#want?.tree !== tree;
    };
    // Removed or changed in shape (path, kind, parent, data type): out first, children first.
    const out: Mounted[] = [];
    for (const [ref, m] of this.#mounted) {
      const w = want.get(ref);
      if (!w || this.#reshaped(w.node, w.path, m)) out.push(m);
    }
    out.sort((a, b) => b.path.length - a.path.length);
    for (const m of out) {
      this.#unmount(m);
      if (await pause()) return false;
    }
    const objects = this.server.engine.addressSpace!.rootFolder.objects;
    for (const { node, path } of want.values()) {
      const m = this.#mounted.get(node.ref);
      if (m) {
        this.#refresh(m, node);
      } else {
        const parent = node.parentRef ? this.#mounted.get(node.parentRef)?.ua : objects;
        if (parent) this.#mount(node, path, parent);
      }
      if (await pause()) return false;
    }
    return true;
  }

  #reshaped(w: OpcuaNode, path: string, m: Mounted): boolean {
    return (
      path !== m.path ||
      w.kind !== m.node.kind ||
      w.parentRef !== m.node.parentRef ||
      (w.kind === 'Tag' && (w.dataType !== m.node.dataType || w.originId !== m.node.originId)) ||
      (w.parentRef !== null && !this.#mounted.has(w.parentRef))
    );
  }

  #mount(node: OpcuaNode, path: string, parent: UAObject | UAVariable): void {
    const o = this.#o;
    const ns = this.#ns;
    const nodeId = uaNodeId(path);
    const common = { browseName: node.id, nodeId, displayName: node.name, description: node.description };
    try {
      let ua: UAObject | UAVariable;
      if (node.kind === 'Folder') ua = ns.addFolder(parent as UAObject, common);
      else if (node.kind === 'Device') ua = ns.addObject({ organizedBy: parent as UAObject, ...common });
      else {
        const variable = ns.addVariable({
          organizedBy: parent as UAObject,
          ...common,
          dataType: uaDataType(node.dataType),
          minimumSamplingInterval: 0,
          accessLevel: accessOf(node),
          userAccessLevel: accessOf(node),
        });
        ua = variable;
        const dataType = variable.dataTypeObj.basicDataType;
        variable.setValueFromSource(
          new o.Variant({ dataType, value: zeroOf(o, dataType) }),
          o.StatusCodes.BadWaitingForInitialData,
        );
        this.#bindWrite(variable, node.ref);
        if (node.originId) {
          let set = this.#byTag.get(node.originId);
          if (!set) this.#byTag.set(node.originId, (set = new Set()));
          set.add(variable);
          const last = this.#last.get(node.originId);
          if (last) this.#setValue(variable, last);
        }
      }
      this.#mounted.set(node.ref, { node, path, ua });
    } catch (err) {
      log('warn', { err: String(err), path }, 'opcua node not added to the address space');
    }
  }

  #unmount(m: Mounted): void {
    if (!this.#mounted.has(m.node.ref)) return;
    this.#mounted.delete(m.node.ref);
    if (m.node.kind === 'Tag' && m.node.originId) {
      const set = this.#byTag.get(m.node.originId);
      set?.delete(m.ua as UAVariable);
      if (set?.size === 0) this.#byTag.delete(m.node.originId);
    }
    try {
      this.server.engine.addressSpace!.deleteNode(m.ua);
    } catch (err) {
      log('warn', { err: String(err), path: m.path }, 'opcua node not removed from the address space');
    }
  }

  /** Changes that keep the node: names, description, access. */
  #refresh(m: Mounted, node: OpcuaNode): void {
    const o = this.#o;
    if (m.node.name !== node.name) m.ua.setDisplayName(node.name);
    if (m.node.description !== node.description) m.ua.setDescription(node.description);
    if (node.kind === 'Tag' && m.node.accessControl !== node.accessControl) {
      const v = m.ua as UAVariable & { accessLevel: number; userAccessLevel: number };
      v.accessLevel = o.makeAccessLevelFlag(accessOf(node));
      v.userAccessLevel = o.makeAccessLevelFlag(accessOf(node));
    }
    if (node.kind === 'Tag' && node.syncState === 'Orphaned' && m.node.syncState !== 'Orphaned') {
      const v = m.ua as UAVariable;
      v.setValueFromSource(v.readValue().value, o.StatusCodes.BadConfigurationError);
    }
    m.node = node;
  }

  /** A write goes to the main thread (the tag's Command subject); the driver's answer is the status. */
  #bindWrite(variable: UAVariable, ref: string): void {
    const o = this.#o;
    const write = (dataValue: DataValue, callback: (err: Error | null, statusCode?: StatusCode) => void) => {
      const originId = this.#mounted.get(ref)?.node.originId;
      if (!originId) {
        callback(null, o.StatusCodes.BadNotWritable);
        return;
      }
      const value = plain(dataValue.value.value);
      void this.ask<UaWriteStatus>((id) => ({ t: 'write', id, tagId: originId, value })).then((status) =>
        callback(null, o.StatusCodes[status]),
      );
    };
    (variable as unknown as { _timestamped_set_func: typeof write })._timestamped_set_func = write;
  }

  // --- calls from the main thread

  async rpc(call: UaRpc): Promise<unknown> {
    switch (call.op) {
      case 'maxSessions':
        return this.server.engine.serverCapabilities.maxSessions;
      case 'move':
        return this.#move(call.thumbprint, call.to);
      case 'delete': {
        const { info } = this.#find(call.thumbprint);
        if (info.group === 'Trusted') await this.#certs.removeTrustedCertificate(info.thumbprint);
        rmSync(join(certificateFolder(this.#folders, info.group), info.fileName), { force: true });
        return true;
      }
      case 'shutdown':
        await this.server.shutdown(0);
        await this.#certs.dispose().catch(() => undefined);
        return true;
    }
  }

  #find(thumbprint: string) {
    const t = thumbprint.toLowerCase().replace(/[^0-9a-f]/g, '');
    const info = listCertificates(this.#folders).find((c) => c.thumbprint === t);
    if (!info) throw new RpcError(`no client certificate with thumbprint ${thumbprint}`, 404);
    const file = join(certificateFolder(this.#folders, info.group), info.fileName);
    return { info, der: Buffer.from(new X509Certificate(readFileSync(file)).raw) };
  }

  async #move(thumbprint: string, to: 'Trusted' | 'Rejected') {
    const { info, der } = this.#find(thumbprint);
    if (info.group !== to) {
      if (to === 'Trusted') await this.#certs.trustCertificate(der);
      else await this.#certs.rejectCertificate(der);
    }
    const moved = listCertificates(this.#folders, to).find((c) => c.thumbprint === info.thumbprint);
    if (!moved) throw new RpcError(`certificate ${thumbprint} was not moved to ${to}`, 400);
    return moved;
  }

  applySettings(s: UaWorkerData['settings']): void {
    this.#certs.automaticallyAcceptUnknownCertificate = s.autoAcceptUntrusted;
    this.server.engine.serverCapabilities.maxSessions = s.maxSessions;
  }
}

/** node-opcua loaded, its server made and initialised (the standard nodeset loaded). */
async function create(data: UaWorkerData): Promise<UaWorker> {
  const o = await loadNodeOpcua({
    debug: (msg) => log('debug', {}, msg),
    warn: (msg) => log('warn', {}, msg),
    error: (msg) => log('error', {}, msg),
  });
  const settings = data.settings;
  mkdirSync(data.pkiDir, { recursive: true });
  // node-opcua-pki guards its folder with a `mutex` file; a process that stopped while it held it
  // (an edge exiting during its first start) leaves it behind, and the next start would wait on
  // it forever. Only this edge uses this PKI (its data directory is locked by service.lock), so a
  // mutex present now is stale.
  rmSync(join(data.pkiDir, 'mutex'), { force: true, recursive: true });
  const certs = new o.OPCUACertificateManager({
    rootFolder: data.pkiDir,
    automaticallyAcceptUnknownCertificate: settings.autoAcceptUntrusted,
  });
  await certs.initialize();
  let worker: UaWorker | null = null;
  const server = new o.OPCUAServer({
    port: data.port,
    hostname: data.host === '0.0.0.0' ? undefined : data.host,
    serverCertificateManager: certs,
    securityPolicies: settings.securityPolicies.map((p) => o.SecurityPolicy[p]),
    securityModes: settings.securityModes.map((m) => o.MessageSecurityMode[m]),
    allowAnonymous: settings.allowAnonymous,
    serverCapabilities: { maxSessions: settings.maxSessions },
    userManager: {
      // node-opcua calls it with a callback (err, isAuthorized); the users live in the main thread.
      isValidUserAsync: (
        username: string,
        password: string,
        callback: (err: Error | null, isAuthorized?: boolean) => void,
      ) => {
        if (!worker) return callback(null, false);
        void worker
          .ask<boolean>((id) => ({ t: 'user', id, username, password }))
          .then((ok) => callback(null, ok));
      },
    },
    buildInfo: {
      productName: 'Millwright edge OPC UA server',
      productUri: data.productUri,
      manufacturerName: 'Millwright',
      softwareVersion: data.buildVersion,
    },
    serverInfo: {
      applicationUri: data.productUri,
      productUri: data.productUri,
      applicationName: { text: 'Millwright edge', locale: 'en' },
    },
  });
  await server.initialize();
  worker = new UaWorker(o, server, certs);
  return worker;
}

async function main(): Promise<void> {
  const data = workerData as UaWorkerData;
  // Messages that arrive before the server exists: the newest tree, the values, a shutdown.
  let worker: UaWorker | null = null;
  const early: { tree?: NodeTree; seq: number } = { seq: 0 };
  let building: OpcuaNode[] = [];
  let bound: (() => void) | null = null;
  const earlyValues: UaValue[] = [];
  port.on('message', (m: ToWorker) => {
    switch (m.t) {
      case 'bind':
        bound?.();
        return;
      case 'tree-begin':
        building = [];
        return;
      case 'tree-chunk':
        for (const n of m.nodes) building.push(n);
        return;
      case 'tree-end': {
        const tree = new NodeTree(building);
        building = [];
        if (worker) worker.want(tree, m.seq);
        else Object.assign(early, { tree, seq: m.seq });
        return;
      }
      case 'values':
        if (worker) worker.values(batchValues(m.batch));
        else for (const v of batchValues(m.batch)) earlyValues.push(v);
        if (earlyValues.length > 100_000) earlyValues.splice(0, earlyValues.length - 100_000);
        return;
      case 'settings':
        worker?.applySettings(m.settings);
        return;
      case 'user':
        worker?.answered(m.id, m.ok);
        return;
      case 'written':
        worker?.answered(m.id, m.status);
        return;
      case 'rpc':
        if (!worker) return send({ t: 'rpc', id: m.id, ok: false, error: 'the OPC UA server is starting' });
        worker.rpc(m.call).then(
          (value) => send({ t: 'rpc', id: m.id, ok: true, value }),
          (err: unknown) =>
            send({
              t: 'rpc',
              id: m.id,
              ok: false,
              error: err instanceof Error ? err.message : String(err),
              ...(err instanceof RpcError ? { status: err.status } : {}),
            }),
        );
        return;
    }
  });
  try {
    const w = await create(data);
    await new Promise<void>((resolve) => {
      bound = resolve;
      send({ t: 'bind' });
    });
    await w.server.start();
    worker = w;
    w.values(earlyValues.splice(0));
    send({
      t: 'listening',
      port: w.server.endpoints[0]!.port,
      endpointUrl: w.server.getEndpointUrl(),
      folders: w.folders,
    });
    if (early.tree) w.want(early.tree, early.seq);
    early.tree = undefined;
  } catch (err) {
    send({ t: 'failed', error: err instanceof Error ? err.message : String(err) });
  }
}

/** The value a variable has before its first value arrives (its status says it has none yet). */
function zeroOf(o: Opcua, dataType: number): unknown {
  if (dataType === o.DataType.Boolean) return false;
  if (dataType === o.DataType.String) return '';
  return 0;
}

function accessOf(node: OpcuaNode): string {
  return node.accessControl === 'ReadWrite' ? 'CurrentRead | CurrentWrite' : 'CurrentRead';
}

/** A payload value as node-opcua takes it for `dataType`. */
function coerce(o: Opcua, dataType: number, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (dataType) {
    case o.DataType.Boolean:
      return value === true || value === 1 || value === 'true' || value === '1';
    case o.DataType.String:
      return typeof value === 'string' ? value : JSON.stringify(value);
    case o.DataType.Int64:
    case o.DataType.UInt64:
      return Number(value);
    case o.DataType.Double:
    case o.DataType.Float:
    case o.DataType.SByte:
    case o.DataType.Byte:
    case o.DataType.Int16:
    case o.DataType.UInt16:
    case o.DataType.Int32:
    case o.DataType.UInt32: {
      const n = typeof value === 'number' ? value : Number(value);
      if (Number.isNaN(n) && typeof value !== 'number') throw new Error('not a number');
      return n;
    }
    default:
      return value;
  }
}

/** A written variant value as JSON for the Command subject (Int64 pairs become numbers). */
function plain(value: unknown): unknown {
  if (Array.isArray(value) && value.length === 2 && value.every((x) => typeof x === 'number')) {
    return value[0]! * 0x1_0000_0000 + value[1]!;
  }
  if (typeof value === 'bigint') return Number(value);
  return value;
}

void main();
