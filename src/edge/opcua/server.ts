/**
 * The node-opcua server of the edge: the address space built from the node tree (folders,
 * devices, tags under Objects), tag values from the DataHub (value, source timestamp, Good/Bad),
 * writes to the tag's Command subject (the driver's answer is the status code), users and the
 * server's certificate store. node-opcua is loaded on first start (its import takes a second).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type {
  DataValue,
  Namespace,
  OPCUACertificateManager,
  OPCUAServer,
  UAObject,
  UAVariable,
  StatusCode,
  Variant,
} from 'node-opcua';
import {
  NoRespondersError,
  RequestTimeoutError,
  type DataHub,
  type Message,
  type Subscription,
} from '../datahub/index.js';
import { badRequest, notFound } from '../../kernel/errors.js';
import type { AddressSpaceSink, OpcuaService } from './service.js';
import { uaNodeId, type NodeTree } from './tree.js';
import type { CertificateGroup, CertificateInfo, OpcuaNode, ServerSettings } from './types.js';

type Opcua = typeof import('node-opcua');
let loaded: Promise<Opcua> | undefined;
export const loadOpcua = (): Promise<Opcua> => (loaded ??= import('node-opcua'));

/** How long a write waits for the driver's answer. */
const WRITE_TIMEOUT_MS = 10_000;

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
}

interface Mounted {
  node: OpcuaNode;
  path: string;
  ua: UAObject | UAVariable;
}

/** DeviceHub value type → OPC UA built-in data type name. */
export function uaDataType(valueType: string | null): string {
  switch (valueType) {
    case 'float64':
      return 'Double';
    case 'float32':
      return 'Float';
    case 'int8':
    case 'sint':
      return 'SByte';
    case 'byte':
    case 'uint8':
      return 'Byte';
    case 'int16':
      return 'Int16';
    case 'uint16':
    case 'word':
      return 'UInt16';
    case 'int32':
      return 'Int32';
    case 'uint32':
    case 'dword':
      return 'UInt32';
    case 'int64':
      return 'Int64';
    case 'uint64':
      return 'UInt64';
    case 'bool':
    case 'bit':
    case 'boolean':
      return 'Boolean';
    default:
      return 'String';
  }
}

export class UaServer implements AddressSpaceSink {
  readonly #o: Opcua;
  readonly server: OPCUAServer;
  readonly certificates: OPCUACertificateManager;
  readonly #ns: Namespace;
  readonly #hub: DataHub;
  readonly #service: OpcuaService;
  readonly #log: Logger | undefined;
  /** Address space nodes by tree reference. */
  readonly #mounted = new Map<string, Mounted>();
  /** Tag variables by DeviceHub tag ID (several nodes may follow one tag). */
  readonly #byTag = new Map<string, Set<UAVariable>>();
  /** The last payload of each tag, for nodes made after it arrived. */
  readonly #last = new Map<string, Record<string, unknown>>();
  #sub: Subscription | undefined;
  /** Payloads applied to variables (for the bench and metrics). */
  updates = 0;

  private constructor(
    o: Opcua,
    server: OPCUAServer,
    certificates: OPCUACertificateManager,
    options: UaServerOptions,
  ) {
    this.#o = o;
    this.server = server;
    this.certificates = certificates;
    this.#ns = server.engine.addressSpace!.getOwnNamespace();
    this.#hub = options.hub;
    this.#service = options.service;
    this.#log = options.logger;
  }

  static async start(options: UaServerOptions): Promise<UaServer> {
    const o = await loadOpcua();
    const settings = options.service.settings;
    mkdirSync(options.pkiDir, { recursive: true });
    const certificates = new o.OPCUACertificateManager({
      rootFolder: options.pkiDir,
      automaticallyAcceptUnknownCertificate: settings.autoAcceptUntrusted,
    });
    await certificates.initialize();
    const service = options.service;
    const server = new o.OPCUAServer({
      port: options.port,
      hostname: options.host === '0.0.0.0' ? undefined : options.host,
      serverCertificateManager: certificates,
      securityPolicies: settings.securityPolicies.map((p) => o.SecurityPolicy[p]),
      securityModes: settings.securityModes.map((m) => o.MessageSecurityMode[m]),
      allowAnonymous: settings.allowAnonymous,
      serverCapabilities: { maxSessions: settings.maxSessions },
      userManager: {
        // node-opcua calls it with a callback (err, isAuthorized).
        isValidUserAsync: (
          username: string,
          password: string,
          callback: (err: Error | null, isAuthorized?: boolean) => void,
        ) => {
          service.checkUser(username, password).then(
            (ok) => callback(null, ok),
            (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
          );
        },
      },
      buildInfo: {
        productName: 'Millwright edge OPC UA server',
        productUri: options.productUri ?? 'urn:millwright:edge:opcua',
        manufacturerName: 'Millwright',
        softwareVersion: options.buildVersion ?? '0',
      },
      serverInfo: {
        applicationUri: options.productUri ?? 'urn:millwright:edge:opcua',
        productUri: options.productUri ?? 'urn:millwright:edge:opcua',
        applicationName: { text: 'Millwright edge', locale: 'en' },
      },
    });
    await server.initialize();
    const ua = new UaServer(o, server, certificates, options);
    ua.#sub = options.hub.subscribe('devicehub.raw.>', (msg) => ua.#onValue(msg));
    service.attach(ua);
    service.onSettings((s) => ua.#applySettings(s));
    try {
      await server.start();
    } catch (err) {
      ua.#sub?.unsubscribe();
      service.attach(null);
      await server.shutdown().catch(() => undefined);
      throw err;
    }
    return ua;
  }

  get port(): number {
    return this.server.endpoints[0]!.port;
  }

  get endpointUrl(): string {
    return this.server.getEndpointUrl();
  }

  /** Applies the settings node-opcua takes at run time (the others wait for a restart). */
  #applySettings(s: ServerSettings): void {
    this.certificates.automaticallyAcceptUnknownCertificate = s.autoAcceptUntrusted;
    this.server.engine.serverCapabilities.maxSessions = s.maxSessions;
  }

  async shutdown(): Promise<void> {
    this.#sub?.unsubscribe();
    this.#service.onSettings(undefined);
    this.#service.attach(null);
    await this.server.shutdown(0);
    await this.certificates.dispose().catch(() => undefined);
  }

  // --- live values

  #onValue(msg: Message): void {
    const p = msg.data as Record<string, unknown> | null;
    if (!p || typeof p !== 'object' || Buffer.isBuffer(p)) return;
    const tagId = p.registerId;
    if (typeof tagId !== 'string') return;
    this.#last.set(tagId, p);
    const vars = this.#byTag.get(tagId);
    if (!vars) return;
    for (const v of vars) this.#setValue(v, p);
  }

  #setValue(v: UAVariable, p: Record<string, unknown>): void {
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
    this.updates++;
    v.setValueFromSource(variant, status, ts);
  }

  // --- the address space

  reconcile(tree: NodeTree): void {
    const o = this.#o;
    const ns = this.#ns;
    const objects = this.server.engine.addressSpace!.rootFolder.objects;
    const want = new Map<string, { node: OpcuaNode; path: string }>();
    for (const node of tree.ordered()) want.set(node.ref, { node, path: tree.path(node.ref) });
    // Removed or changed in shape (path, kind, parent, data type): out first, children first.
    const out: Mounted[] = [];
    for (const [ref, m] of this.#mounted) {
      const w = want.get(ref);
      const parentMounted = w?.node.parentRef ? this.#mounted.get(w.node.parentRef) : undefined;
      if (
        !w ||
        w.path !== m.path ||
        w.node.kind !== m.node.kind ||
        w.node.parentRef !== m.node.parentRef ||
        (w.node.kind === 'Tag' &&
          (w.node.dataType !== m.node.dataType || w.node.originId !== m.node.originId)) ||
        (w.node.parentRef !== null && !parentMounted)
      ) {
        out.push(m);
      }
    }
    // Children before parents (longer paths first).
    out.sort((a, b) => b.path.length - a.path.length);
    for (const m of out) this.#unmount(m);
    for (const { node, path } of want.values()) {
      const m = this.#mounted.get(node.ref);
      if (m) {
        if (m.node !== node) this.#refresh(m, node);
        continue;
      }
      const parent = node.parentRef ? this.#mounted.get(node.parentRef)?.ua : objects;
      if (!parent) continue;
      const nodeId = uaNodeId(path);
      let ua: UAObject | UAVariable;
      try {
        if (node.kind === 'Folder') {
          ua = ns.addFolder(parent as UAObject, {
            browseName: node.id,
            nodeId,
            displayName: node.name,
            description: node.description,
          });
        } else if (node.kind === 'Device') {
          ua = ns.addObject({
            organizedBy: parent as UAObject,
            browseName: node.id,
            nodeId,
            displayName: node.name,
            description: node.description,
          });
        } else {
          const variable = ns.addVariable({
            organizedBy: parent as UAObject,
            browseName: node.id,
            nodeId,
            displayName: node.name,
            description: node.description,
            dataType: uaDataType(node.dataType),
            minimumSamplingInterval: 0,
            accessLevel: accessOf(node),
            userAccessLevel: accessOf(node),
          });
          ua = variable;
          this.#mounted.set(node.ref, { node, path, ua });
          const dataType = variable.dataTypeObj.basicDataType;
          variable.setValueFromSource(
            new o.Variant({ dataType, value: zeroOf(o, dataType) }),
            o.StatusCodes.BadWaitingForInitialData,
          );
          this.#bindWrite(variable, node);
          if (node.originId) {
            let set = this.#byTag.get(node.originId);
            if (!set) this.#byTag.set(node.originId, (set = new Set()));
            set.add(variable);
            const last = this.#last.get(node.originId);
            if (last) this.#setValue(variable, last);
          }
        }
      } catch (err) {
        this.#log?.warn({ err, path }, 'opcua node not added to the address space');
        continue;
      }
      this.#mounted.set(node.ref, { node, path, ua });
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
      this.#log?.warn({ err, path: m.path }, 'opcua node not removed from the address space');
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

  /** A write goes to the tag's Command subject; the driver's answer is the status code. */
  #bindWrite(variable: UAVariable, node: OpcuaNode): void {
    const o = this.#o;
    const ref = node.ref;
    const write = (dataValue: DataValue, callback: (err: Error | null, statusCode?: StatusCode) => void) => {
      const m = this.#mounted.get(ref);
      const originId = m?.node.originId;
      if (!m || !originId) {
        callback(null, o.StatusCodes.BadNotWritable);
        return;
      }
      void this.#write(originId, plain(dataValue.value.value)).then(
        (status) => callback(null, status),
        (err: unknown) => {
          this.#log?.warn({ err, ref }, 'opcua write failed');
          callback(null, o.StatusCodes.BadInternalError);
        },
      );
    };
    (variable as unknown as { _timestamped_set_func: typeof write })._timestamped_set_func = write;
  }

  async #write(tagId: string, value: unknown): Promise<StatusCode> {
    const o = this.#o;
    const tag = await this.#service.originTag(tagId);
    if (!tag) return o.StatusCodes.BadNodeIdUnknown;
    try {
      const reply = await this.#hub.request(
        `devicehub.command.${tag.deviceName}.${tag.tagName}`,
        { value },
        { timeout: WRITE_TIMEOUT_MS },
      );
      const answer = reply.json<{ success?: boolean; error?: string }>();
      if (answer.success === true) return o.StatusCodes.Good;
      this.#log?.info({ tagId, error: answer.error }, 'opcua write refused by the driver');
      if (typeof answer.error === 'string' && answer.error.startsWith('no running tag'))
        return o.StatusCodes.BadNoCommunication;
      return o.StatusCodes.BadDeviceFailure;
    } catch (err) {
      if (err instanceof NoRespondersError) return o.StatusCodes.BadNotConnected;
      if (err instanceof RequestTimeoutError) return o.StatusCodes.BadTimeout;
      throw err;
    }
  }

  // --- certificates

  #folder(group: CertificateGroup): string {
    return group === 'Trusted' ? this.certificates.trustedFolder : this.certificates.rejectedFolder;
  }

  /** Client certificates of a group (files in the PKI's trusted/certs or rejected folder). */
  listCertificates(group?: CertificateGroup | null): CertificateInfo[] {
    const groups: CertificateGroup[] = group ? [group] : ['Trusted', 'Rejected'];
    const out: CertificateInfo[] = [];
    for (const g of groups) {
      let files: string[] = [];
      try {
        files = readdirSync(this.#folder(g)).filter((f) => /\.(der|pem|crt|cer)$/i.test(f));
      } catch {
        files = [];
      }
      for (const fileName of files) {
        try {
          const raw = readFileSync(join(this.#folder(g), fileName));
          const x = new X509Certificate(raw);
          const uri = /URI:([^,\s]+)/.exec(x.subjectAltName ?? '')?.[1] ?? null;
          out.push({
            thumbprint: createHash('sha1').update(x.raw).digest('hex'),
            group: g,
            fileName,
            subject: x.subject.replace(/\n/g, ', '),
            applicationUri: uri,
            notBefore: new Date(x.validFrom).toISOString(),
            notAfter: new Date(x.validTo).toISOString(),
          });
        } catch (err) {
          this.#log?.warn({ err, fileName }, 'opcua certificate file not readable');
        }
      }
    }
    return out;
  }

  #find(thumbprint: string): { info: CertificateInfo; der: Buffer } {
    const t = thumbprint.toLowerCase().replace(/[^0-9a-f]/g, '');
    const info = this.listCertificates().find((c) => c.thumbprint === t);
    if (!info) throw notFound(`no client certificate with thumbprint ${thumbprint}`);
    const der = Buffer.from(
      new X509Certificate(readFileSync(join(this.#folder(info.group), info.fileName))).raw,
    );
    return { info, der };
  }

  /** Moves a client certificate to `to` (Trusted: its sessions are accepted; Rejected: refused). */
  async moveCertificate(thumbprint: string, to: CertificateGroup): Promise<CertificateInfo> {
    const { info, der } = this.#find(thumbprint);
    if (info.group !== to) {
      if (to === 'Trusted') await this.certificates.trustCertificate(der);
      else await this.certificates.rejectCertificate(der);
    }
    const moved = this.listCertificates(to).find((c) => c.thumbprint === info.thumbprint);
    if (!moved) throw badRequest(`certificate ${thumbprint} was not moved to ${to}`);
    return moved;
  }

  async deleteCertificate(thumbprint: string): Promise<boolean> {
    const { info } = this.#find(thumbprint);
    if (info.group === 'Trusted') await this.certificates.removeTrustedCertificate(info.thumbprint);
    rmSync(join(this.#folder(info.group), info.fileName), { force: true });
    return true;
  }

  /** The server's own certificate (PEM), made on first start. */
  ownCertificatePem(): string | null {
    try {
      return readFileSync(join(this.certificates.ownCertFolder, 'certificate.pem'), 'utf8');
    } catch {
      return null;
    }
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
      return typeof value === 'bigint' ? Number(value) : Number(value);
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
