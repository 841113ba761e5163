/**
 * The OPC UA client driver, on node-opcua: read (one Read service call per poll for every tag due),
 * monitored items in one subscription instead of polling when the device's `useSubscriptions` is
 * on (the default; sampling interval = the tag's IntervalMs; the server reports changes), write
 * (the node's built-in data type is asked once), browse (the Objects folder, variables as leaves),
 * security modes None, Sign and SignAndEncrypt with the device's policy; the client's certificate
 * is made on first use in `<data-dir>/acquisition/opcua-pki`; a server's certificate is trusted on
 * first use or, with `trustServerCertificate` `ca`, only when the edge's trust store vouches for it
 * (opcua-pki.ts). node-opcua is loaded on first use (it is large), not when the edge starts.
 */
import type { Logger } from 'pino';
import { loadNodeOpcua } from '../../../kernel/node-opcua.js';
import type {
  ClientSession,
  ClientSubscription,
  ClientMonitoredItemBase,
  DataValue,
  OPCUAClient,
  ReferenceDescription,
  UserIdentityInfo,
} from 'node-opcua';
import type { BrowseNode } from '../../devicehub/index.js';
import { bigToJson, coerce, numberAs } from '../convert.js';
import { errorText } from '../engine.js';
import { clientPki, type ClientPki } from './opcua-pki.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverContext,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type ValueSink,
} from '../types.js';

type Opcua = typeof import('node-opcua');
/** node-opcua (loaded on first use), its own messages in the edge's log (kernel/node-opcua.ts). */
const load = (logger: Logger | undefined): Promise<Opcua> =>
  loadNodeOpcua({
    debug: (msg) => logger?.debug(msg),
    warn: (msg) => (logger ? logger.warn(msg) : console.warn(msg)),
    error: (msg) => (logger ? logger.error(msg) : console.error(msg)),
  });

interface Connection {
  client: OPCUAClient;
  session: ClientSession;
}

/** Where a connection keeps its PKI, and the trust store's certificates (PEM) for `ca`. */
interface PkiSource {
  dataDir: string;
  trustedCertificates?(): readonly string[];
}

/** node-opcua's refusal of the server's certificate, in words that say what to do. */
function certificateRefusal(err: unknown, policy: string, pki: ClientPki): string | undefined {
  const status = /server Certificate verification failed with err (\w+)/.exec(errorText(err))?.[1];
  if (!status) return undefined;
  const head = `the server's certificate is not trusted (${status})`;
  if (policy === 'ca')
    return `${head}: with trustServerCertificate "ca" it must be signed by a CA certificate of the edge's trust store (/dm/v2/ca-certificates, synchronised by the edge manager) or be in ${pki.rootDir}/trusted/certs`;
  if (status === 'BadCertificateChainIncomplete')
    return `${head}: a CA the edge does not know signed it and the server did not send that CA; put the CA in the edge's trust store and set trustServerCertificate to "ca", or have the server send its certificate chain`;
  return head;
}

async function openSession(
  o: Opcua,
  props: Record<string, string>,
  source: PkiSource,
  onLost?: (reason: string) => void,
): Promise<Connection> {
  const mode = props.securityMode ?? 'None';
  const policy = mode === 'None' ? 'None' : (props.securityPolicy ?? 'None');
  if (mode !== 'None' && policy === 'None')
    throw new Error(`securityMode ${mode} needs a securityPolicy other than None`);
  if (policy === 'Basic128Rsa15')
    throw new Error(
      `securityPolicy Basic128Rsa15 (deprecated) decrypts with RSA PKCS#1 v1.5, which Node ${process.version} refuses (CVE-2023-46809): use Basic256Sha256, Aes128_Sha256_RsaOaep or Aes256_Sha256_RsaPss`,
    );
  const trust = props.trustServerCertificate ?? 'auto';
  if (trust !== 'auto' && trust !== 'ca') throw new Error(`trustServerCertificate ${trust}: auto or ca`);
  const pki = await clientPki(
    o,
    source.dataDir,
    trust,
    trust === 'ca' ? (source.trustedCertificates?.() ?? []) : [],
  );
  const client = o.OPCUAClient.create({
    applicationName: 'Millwright',
    applicationUri: 'urn:millwright:edge:acquisition',
    endpointMustExist: false,
    securityMode: o.MessageSecurityMode[mode as 'None'],
    securityPolicy: o.SecurityPolicy[policy as 'None'],
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 500 },
    requestedSessionTimeout: 60_000,
    defaultTransactionTimeout: Number(props.requestTimeoutMs ?? 5000),
    keepSessionAlive: true,
    clientCertificateManager: pki.clientCertificateManager,
    certificateFile: pki.certificateFile,
    privateKeyFile: pki.privateKeyFile,
  });
  const url = props.endpointUrl ?? '';
  try {
    await client.connect(url);
  } catch (err) {
    await client.disconnect().catch(() => undefined);
    throw new Error(`cannot connect to ${url}: ${certificateRefusal(err, trust, pki) ?? errorText(err)}`);
  }
  const identity: UserIdentityInfo = props.username
    ? { type: o.UserTokenType.UserName, userName: props.username, password: props.password ?? '' }
    : { type: o.UserTokenType.Anonymous };
  let session: ClientSession;
  try {
    session = await client.createSession(identity);
  } catch (err) {
    await client.disconnect().catch(() => undefined);
    throw new Error(`${url}: cannot open a session: ${errorText(err)}`);
  }
  if (onLost) {
    client.on('connection_lost', () => onLost(`connection to ${url} lost`));
    session.on('session_closed', () => onLost(`session on ${url} closed`));
  }
  return { client, session };
}

/** A variant value as the tag's value type. */
function fromVariant(v: unknown, valueType: string): ReadResult {
  try {
    if (v === null || v === undefined) return null;
    if (v instanceof Date)
      return valueType === 'datetime' || valueType === 'string' ? v.toISOString() : v.getTime();
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && /int64/.test(valueType)) {
      const big = (BigInt(v[0] >>> 0) << 32n) | BigInt(v[1] >>> 0);
      return bigToJson(valueType === 'int64' ? BigInt.asIntN(64, big) : big);
    }
    if (typeof v === 'number')
      return valueType === 'datetime' ? new Date(v).toISOString() : numberAs(v, valueType);
    if (typeof v === 'boolean') return valueType === 'bool' ? v : numberAs(v ? 1 : 0, valueType);
    if (typeof v === 'string')
      return valueType === 'string' || valueType === 'datetime' ? v : coerce(v, valueType);
    if (typeof v === 'object' && 'text' in (v as object)) return String((v as { text: unknown }).text ?? '');
    return valueType === 'string' ? JSON.stringify(v) : coerce(v, valueType);
  } catch (err) {
    return new ReadFailure(errorText(err));
  }
}

class OpcuaSession implements DriverSession {
  #o: Opcua | undefined;
  #conn: Connection | undefined;
  #subscription: ClientSubscription | undefined;
  #items = new Map<string, { key: string; item: ClientMonitoredItemBase }>();
  #types = new Map<string, number>();
  #closed = false;
  #lost = false;

  constructor(
    readonly device: DeviceSpec,
    readonly ctx: DriverContext,
  ) {}

  async connect(): Promise<void> {
    this.#o = await load(this.ctx.logger);
    this.#conn = await openSession(this.#o, this.device.props, this.ctx, (reason) => {
      this.#lost = true;
      if (!this.#closed) this.ctx.lost(reason);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const c = this.#conn;
    this.#conn = undefined;
    if (!c) return;
    const polite = async () => {
      // A lost connection has no session to close politely: each call would wait for its timeout.
      if (!this.#lost) {
        await this.#subscription?.terminate().catch(() => undefined);
        await c.session.close().catch(() => undefined);
      }
    };
    await Promise.race([polite(), new Promise((r) => setTimeout(r, 2000).unref())]);
    await c.client.disconnect().catch(() => undefined);
  }

  async read(tags: readonly TagSpec[]): Promise<ReadResult[]> {
    const c = this.#conn;
    const o = this.#o!;
    if (!c) throw new Error('not connected');
    const values: DataValue[] = await c.session.read(
      tags.map((t) => ({ nodeId: t.props.nodeId ?? '', attributeId: o.AttributeIds.Value })),
    );
    return values.map((dv, i) => this.#convert(dv, tags[i]!));
  }

  #convert(dv: DataValue, tag: TagSpec): ReadResult {
    if (!dv.statusCode.isGood()) return new ReadFailure(`${tag.props.nodeId}: ${dv.statusCode.toString()}`);
    return fromVariant(dv.value?.value, tag.valueType);
  }

  async watch(tags: readonly TagSpec[], sink: ValueSink): Promise<readonly TagSpec[]> {
    if (this.device.props.useSubscriptions === 'false') return tags;
    const c = this.#conn;
    const o = this.#o!;
    if (!c) throw new Error('not connected');
    if (!this.#subscription) {
      this.#subscription = await c.session.createSubscription2({
        requestedPublishingInterval: Math.max(Math.min(...tags.map((t) => t.intervalMs), 1000), 50),
        requestedLifetimeCount: 600,
        requestedMaxKeepAliveCount: 20,
        maxNotificationsPerPublish: 10_000,
        publishingEnabled: true,
        priority: 1,
      });
    }
    const sub = this.#subscription;
    const next = new Map<string, { key: string; item: ClientMonitoredItemBase }>();
    for (const tag of tags) {
      const key = `${tag.props.nodeId}|${tag.intervalMs}|${tag.valueType}|${tag.deviceName}.${tag.tagName}`;
      const have = this.#items.get(tag.id);
      if (have && have.key === key) {
        have.item.removeAllListeners('changed');
        have.item.on('changed', (dv: DataValue) => sink(tag, this.#convert(dv, tag), Date.now()));
        next.set(tag.id, have);
        continue;
      }
      if (have) await have.item.terminate().catch(() => undefined);
      const item = await o.ClientMonitoredItem.create(
        sub,
        { nodeId: tag.props.nodeId ?? '', attributeId: o.AttributeIds.Value },
        { samplingInterval: tag.intervalMs, discardOldest: true, queueSize: 1 },
        o.TimestampsToReturn.Both,
      );
      item.on('changed', (dv: DataValue) => sink(tag, this.#convert(dv, tag), Date.now()));
      item.on('err', (message: string) =>
        sink(tag, new ReadFailure(`${tag.props.nodeId}: ${message}`), Date.now()),
      );
      next.set(tag.id, { key, item });
    }
    for (const [id, old] of this.#items) if (!next.has(id)) await old.item.terminate().catch(() => undefined);
    this.#items = next;
    return [];
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const c = this.#conn;
    const o = this.#o!;
    if (!c) throw new Error('not connected');
    const nodeId = tag.props.nodeId ?? '';
    let dataType = this.#types.get(nodeId);
    if (dataType === undefined) {
      dataType = await c.session.getBuiltInDataType(o.resolveNodeId(nodeId));
      this.#types.set(nodeId, dataType);
    }
    let v: unknown = value;
    if (dataType === o.DataType.Int64) v = o.coerceInt64(value as number);
    else if (dataType === o.DataType.UInt64) v = o.coerceUInt64(value as number);
    else if (dataType === o.DataType.DateTime) v = new Date(value as string);
    else if (dataType === o.DataType.Boolean) v = Boolean(value);
    else if (dataType === o.DataType.String) v = String(value);
    const status = await c.session.write({
      nodeId,
      attributeId: o.AttributeIds.Value,
      value: { value: { dataType, value: v } },
    });
    if (!status.isGood()) throw new Error(`write ${nodeId}: ${status.toString()}`);
  }
}

const VALUE_TYPES: Record<string, string> = {
  Boolean: 'bool',
  SByte: 'sint',
  Byte: 'byte',
  Int16: 'int16',
  UInt16: 'uint16',
  Int32: 'int32',
  UInt32: 'uint32',
  Int64: 'int64',
  UInt64: 'uint64',
  Float: 'float32',
  Double: 'float64',
  String: 'string',
  DateTime: 'datetime',
};

/** The Objects folder (without the server's own diagnostics object), variables as leaves. */
export async function browseOpcua(
  props: Record<string, string>,
  source: PkiSource,
  limit = 5000,
  logger?: Logger,
): Promise<BrowseNode[]> {
  const o = await load(logger);
  const { client, session } = await openSession(o, props, source);
  let count = 0;
  try {
    const walk = async (nodeId: string, depth: number): Promise<BrowseNode[]> => {
      if (depth > 8 || count >= limit) return [];
      const r = await session.browse({
        nodeId,
        browseDirection: o.BrowseDirection.Forward,
        referenceTypeId: 'HierarchicalReferences',
        includeSubtypes: true,
        nodeClassMask: o.NodeClassMask.Object | o.NodeClassMask.Variable,
        resultMask: 63,
      });
      const out: BrowseNode[] = [];
      for (const ref of (r.references ?? []) as ReferenceDescription[]) {
        if (count >= limit) break;
        const id = ref.nodeId.toString();
        if (ref.nodeId.namespace === 0 && ref.browseName.name === 'Server') continue;
        count++;
        const name = ref.browseName.name ?? id;
        if (ref.nodeClass === o.NodeClass.Variable) {
          let valueType = 'string';
          try {
            const dt = await session.getBuiltInDataType(ref.nodeId);
            valueType = VALUE_TYPES[o.DataType[dt] as string] ?? 'string';
          } catch {
            // keep string
          }
          out.push({
            Name: name,
            Description: ref.displayName.text ?? name,
            RegisterName: 'Node',
            ValueType: valueType,
            Properties: [{ Name: 'nodeId', Value: id }],
          });
        } else {
          out.push({
            Name: name,
            Description: ref.displayName.text ?? name,
            Children: await walk(id, depth + 1),
          });
        }
      }
      return out;
    };
    return await walk('ObjectsFolder', 0);
  } finally {
    await session.close().catch(() => undefined);
    await client.disconnect().catch(() => undefined);
  }
}

export const opcuaDriver: DriverFactory = {
  key: 'opcua-client',
  create: (device, ctx) => new OpcuaSession(device, ctx),
  browse: async (device, _driver, ctx) => browseOpcua(device.properties, ctx),
};
