/**
 * A BACnet/IP device for the tests, served by @bacnet-js/client's own stack (the same maintained
 * BACnet implementation the driver uses as a client, here answering as a device on a free UDP port
 * of 127.0.0.1): Who-Is (answered by I-Am to the asker), ReadProperty, ReadPropertyMultiple (each
 * property with its own error), WriteProperty with a 16-level priority array on commandable
 * objects, and SubscribeCOV (unconfirmed notifications on every change, and one at subscription).
 * Like a small device it has a maximum APDU (`maxApdu`, announced in its I-Am and as the Device's
 * Max_APDU_Length_Accepted) and no segmentation: a ReadPropertyMultiple whose answer would not fit
 * is answered by an Abort "segmentation not supported". `replyDelayMs` delays every answer (a slow
 * device), and `maxOutstanding` records how many requests were waiting for their answer at once.
 * bacpypes3 (the suggestion) is a PyPI package, and PyPI is not reachable here.
 */
import { createRequire } from 'node:module';
import bacnet, {
  ApplicationTag,
  ErrorClass,
  ErrorCode,
  ObjectType,
  PropertyIdentifier,
  Segmentation,
  type BACNetAppData,
  type BACNetObjectID,
} from '@bacnet-js/client';

/** The client class (the package's CommonJS default export). */
const Bacnet = bacnet.default;
type Bacnet = InstanceType<typeof Bacnet>;

export interface PeerObject {
  type: number;
  instance: number;
  name: string;
  /** Present value as the relinquish default (not commandable) or priority 16 fallback. */
  value: number | boolean;
  units?: number;
  /** Commandable (outputs and values): a 16-level priority array. */
  priorities?: Array<number | boolean | null>;
}

interface Sub {
  address: string;
  process: number;
  object: BACNetObjectID;
  until: number;
}

const key = (o: BACNetObjectID) => `${o.type}:${o.instance}`;

/** The library's own encoder of a ReadPropertyMultiple answer, to measure one before sending it. */
const RPM = (
  createRequire(import.meta.url)('@bacnet-js/client/dist/lib/services/ReadPropertyMultiple.js') as {
    default: { encodeAcknowledge(buffer: { buffer: Buffer; offset: number }, values: unknown[]): void };
  }
).default;
/** The library's transport and raw send, for the Abort it has no method for. */
interface Internals {
  _transport: { getMaxPayload(): number; send(buffer: Buffer, length: number, address?: string): void };
}

export class BacnetPeer {
  readonly objects = new Map<string, PeerObject>();
  readonly subs: Sub[] = [];
  /** Confirmed requests served, by kind. */
  readonly served = { readProperty: 0, readPropertyMultiple: 0, writeProperty: 0, subscribeCov: 0, whoIs: 0 };
  /** Property values served (one per property in a ReadPropertyMultiple). */
  propertyReads = 0;
  port = 0;
  offerCov = true;
  /** The largest APDU this device sends or takes (no segmentation). */
  maxApdu = 1476;
  /** Milliseconds before every confirmed answer. */
  replyDelayMs = 0;
  /** Requests answered by an Abort (answer too long); the most requests waiting at once. */
  aborts = 0;
  maxOutstanding = 0;
  #outstanding = 0;
  #client: Bacnet | undefined;

  constructor(readonly deviceId = 1234) {}

  add(o: PeerObject): PeerObject {
    if (
      o.type === ObjectType.ANALOG_OUTPUT ||
      o.type === ObjectType.BINARY_OUTPUT ||
      o.type === ObjectType.ANALOG_VALUE
    )
      o.priorities = new Array(16).fill(null);
    this.objects.set(key(o), o);
    return o;
  }

  get(type: number, instance: number): PeerObject {
    const o = this.objects.get(`${type}:${instance}`);
    if (!o) throw new Error(`no object ${type}:${instance}`);
    return o;
  }

  presentValue(o: PeerObject): number | boolean {
    return o.priorities?.find((p) => p !== null) ?? o.value;
  }

  /** Changes a value (as the device's own process would) and notifies COV subscribers. */
  set(type: number, instance: number, value: number | boolean): void {
    const o = this.get(type, instance);
    o.value = value;
    this.#notify(o);
  }

  async start(port: number): Promise<number> {
    const client = new Bacnet({
      port,
      interface: '127.0.0.1',
      broadcastAddress: '127.255.255.255',
      apduTimeout: 2000,
    });
    this.#client = client;
    this.port = port;
    // The library sizes its send buffers by the transport's payload (1482: an APDU of 1476 and the
    // BVLC and NPDU heads) and announces that same number in its I-Am as the maximum APDU; here the
    // I-Am announces this device's `maxApdu` and the buffers stay large enough for the heads.
    const transport = (client as unknown as Internals)._transport;
    let announcing = false;
    transport.getMaxPayload = () => (announcing ? this.maxApdu : Math.max(this.maxApdu + 16, 1482));
    client.on('error', () => undefined);
    client.on('whoIs', (c) => {
      this.served.whoIs++;
      const { lowLimit, highLimit } = c.payload;
      if (
        lowLimit !== undefined &&
        highLimit !== undefined &&
        (this.deviceId < lowLimit || this.deviceId > highLimit)
      )
        return;
      announcing = true;
      try {
        client.iAmResponse(c.header!.sender, this.deviceId, Segmentation.NO_SEGMENTATION, 260);
      } finally {
        announcing = false;
      }
    });
    client.on('readProperty', (c) => {
      this.served.readProperty++;
      const { objectId, property } = c.payload;
      const v = this.#read(objectId, property.id);
      if ('error' in v)
        client.errorResponse(c.header!.sender, c.service!, c.invokeId!, v.error[0], v.error[1]);
      else client.readPropertyResponse(c.header!.sender, c.invokeId!, objectId, property, v.values);
    });
    client.on('readPropertyMultiple', (c) => {
      this.served.readPropertyMultiple++;
      this.#outstanding++;
      this.maxOutstanding = Math.max(this.maxOutstanding, this.#outstanding);
      const values = c.payload.properties.map((spec) => ({
        objectId: spec.objectId,
        values: spec.properties.map((p) => {
          const v = this.#read(spec.objectId, p.id);
          return {
            property: { id: p.id, index: p.index },
            value:
              'error' in v
                ? [{ value: { type: 'BacnetError', errorClass: v.error[0], errorCode: v.error[1] } }]
                : v.values,
          };
        }),
      }));
      const scratch = { buffer: Buffer.alloc(65536), offset: 0 };
      RPM.encodeAcknowledge(scratch, values);
      const send = () => {
        this.#outstanding--;
        if (!this.#client) return;
        // A complex ACK's header is 3 bytes: the answer must fit in one APDU of this device.
        if (scratch.offset + 3 > this.maxApdu) {
          this.aborts++;
          return this.#abort(c.header!.sender.address!, c.invokeId!, 4);
        }
        client.readPropertyMultipleResponse(c.header!.sender, c.invokeId!, values as never);
      };
      if (this.replyDelayMs > 0) setTimeout(send, this.replyDelayMs);
      else send();
    });
    client.on('writeProperty', (c) => {
      this.served.writeProperty++;
      const { objectId, value } = c.payload;
      const o = this.objects.get(key(objectId));
      const fail = (cls: number, code: number) =>
        client.errorResponse(c.header!.sender, c.service!, c.invokeId!, cls, code);
      if (!o) return fail(ErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT);
      if (value.property.id !== PropertyIdentifier.PRESENT_VALUE)
        return fail(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED);
      if (!o.priorities) return fail(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED);
      const data = value.value[0] as BACNetAppData | undefined;
      const v = data?.type === ApplicationTag.NULL ? null : (data?.value as number | boolean);
      const prio = value.priority >= 1 && value.priority <= 16 ? value.priority : 16;
      o.priorities[prio - 1] = typeof o.value === 'boolean' && v !== null ? v === 1 || v === true : v;
      client.simpleAckResponse(c.header!.sender, c.service!, c.invokeId!);
      this.#notify(o);
    });
    client.on('subscribeCov', (c) => {
      this.served.subscribeCov++;
      const p = c.payload as typeof c.payload & { cancellationRequest?: boolean };
      const o = this.objects.get(key(p.monitoredObjectId));
      if (!this.offerCov)
        return client.errorResponse(
          c.header!.sender,
          c.service!,
          c.invokeId!,
          ErrorClass.SERVICES,
          ErrorCode.SERVICE_REQUEST_DENIED,
        );
      if (!o)
        return client.errorResponse(
          c.header!.sender,
          c.service!,
          c.invokeId!,
          ErrorClass.OBJECT,
          ErrorCode.UNKNOWN_OBJECT,
        );
      const address = c.header!.sender.address!;
      const i = this.subs.findIndex(
        (s) => s.address === address && s.process === p.subscriberProcessId && key(s.object) === key(o),
      );
      if (i >= 0) this.subs.splice(i, 1);
      if (!p.cancellationRequest)
        this.subs.push({
          address,
          process: p.subscriberProcessId,
          object: { type: o.type, instance: o.instance },
          until: Date.now() + (p.lifetime || 3600) * 1000,
        });
      client.simpleAckResponse(c.header!.sender, c.service!, c.invokeId!);
      if (!p.cancellationRequest) setImmediate(() => this.#notify(o));
    });
    // Give the socket a moment to bind.
    await new Promise((r) => setTimeout(r, 100));
    return port;
  }

  async stop(): Promise<void> {
    this.#client?.close();
    this.#client = undefined;
    this.subs.length = 0;
    await new Promise((r) => setTimeout(r, 50));
  }

  /** An Abort PDU (BVLC original unicast, NPDU, APDU type 7 from the server) with its reason. */
  #abort(address: string, invokeId: number, reason: number): void {
    const pdu = Buffer.from([0x81, 0x0a, 0x00, 0x09, 0x01, 0x00, 0x71, invokeId, reason]);
    (this.#client as unknown as Internals | undefined)?._transport.send(pdu, pdu.length, address);
  }

  #read(objectId: BACNetObjectID, prop: number): { values: BACNetAppData[] } | { error: [number, number] } {
    if (objectId.type === ObjectType.DEVICE) {
      if (objectId.instance !== this.deviceId && objectId.instance !== 4194303)
        return { error: [ErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT] };
      if (prop === PropertyIdentifier.OBJECT_NAME)
        return { values: [{ type: ApplicationTag.CHARACTER_STRING, value: 'millwright-test-device' }] };
      if (prop === PropertyIdentifier.MAX_APDU_LENGTH_ACCEPTED)
        return { values: [{ type: ApplicationTag.UNSIGNED_INTEGER, value: this.maxApdu }] };
      if (prop === PropertyIdentifier.SEGMENTATION_SUPPORTED)
        return { values: [{ type: ApplicationTag.ENUMERATED, value: Segmentation.NO_SEGMENTATION }] };
      if (prop === PropertyIdentifier.OBJECT_LIST)
        return {
          values: [
            {
              type: ApplicationTag.OBJECTIDENTIFIER,
              value: { type: ObjectType.DEVICE, instance: this.deviceId },
            },
            ...[...this.objects.values()].map((o) => ({
              type: ApplicationTag.OBJECTIDENTIFIER,
              value: { type: o.type, instance: o.instance },
            })),
          ] as BACNetAppData[],
        };
      if (prop === PropertyIdentifier.PROTOCOL_SERVICES_SUPPORTED) {
        // Bits: 5 subscribeCOV, 12 readProperty, 14 readPropertyMultiple, 15 writeProperty, 33 who-Is.
        const bits = [12, 14, 15, 33, ...(this.offerCov ? [5] : [])];
        const value = [0, 0, 0, 0, 0, 0];
        for (const b of bits) value[b >> 3]! |= 1 << (b & 7);
        return { values: [{ type: ApplicationTag.BIT_STRING, value: { bitsUsed: 40, value } } as never] };
      }
      return { error: [ErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY] };
    }
    const o = this.objects.get(key(objectId));
    if (!o) return { error: [ErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT] };
    this.propertyReads++;
    switch (prop) {
      case PropertyIdentifier.PRESENT_VALUE: {
        const v = this.presentValue(o);
        if (typeof v === 'boolean')
          return { values: [{ type: ApplicationTag.ENUMERATED, value: v ? 1 : 0 }] };
        if (o.type >= 13) return { values: [{ type: ApplicationTag.UNSIGNED_INTEGER, value: v }] };
        return { values: [{ type: ApplicationTag.REAL, value: v }] };
      }
      case PropertyIdentifier.OBJECT_NAME:
        return { values: [{ type: ApplicationTag.CHARACTER_STRING, value: o.name }] };
      case PropertyIdentifier.UNITS:
        return o.units === undefined
          ? { error: [ErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY] }
          : { values: [{ type: ApplicationTag.ENUMERATED, value: o.units }] };
      default:
        return { error: [ErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY] };
    }
  }

  #notify(o: PeerObject): void {
    const client = this.#client;
    if (!client) return;
    const now = Date.now();
    for (const s of this.subs) {
      if (key(s.object) !== key(o) || s.until < now) continue;
      const v = this.#read(s.object, PropertyIdentifier.PRESENT_VALUE);
      if ('error' in v) continue;
      client.unconfirmedCOVNotification(
        { address: s.address },
        s.process,
        this.deviceId,
        s.object,
        Math.round((s.until - now) / 1000),
        [
          { property: { id: PropertyIdentifier.PRESENT_VALUE, index: 0xffffffff }, value: v.values },
          {
            property: { id: PropertyIdentifier.STATUS_FLAGS, index: 0xffffffff },
            value: [{ type: ApplicationTag.BIT_STRING, value: { bitsUsed: 4, value: [0] } } as never],
          },
        ] as never,
      );
    }
  }
}
