/**
 * The bytes of a tag's value message on the DataHub's NATS connections, made from the tag's parts
 * encoded once (its ID, names, description and metadata) and the few fields that change per read
 * (timestamp, value): the same bytes as JSON of the payload object, in about a third of the time
 * (one NATS message per value: at 90,000 values a second, JSON of the payloads took a fifth to a
 * third of the edge's main thread). In-process subscribers still get the payload object itself.
 * The parts are made on the first value a NATS connection takes (none while only in-process
 * subscribers listen), about 130 bytes a tag; the device's part is shared by its tags.
 */
import type { PayloadEncoder, PublishOptions } from '../datahub/index.js';
import { flat } from './subjects.js';
import type { TagSpec, TagValue } from './types.js';

/** A successful read's payload as the acquisition engine publishes it (wire notes), in this order. */
export interface ValuePayload {
  success: true;
  datatype: string;
  timestamp: number;
  registerId: string;
  value: TagValue;
  deviceID: string;
  deviceName: string;
  tagName: string;
  description: string;
  metadata: Record<string, unknown>;
}

/**
 * A successful read's payload, a plain object (`Object.prototype`, these fields in this order) made
 * by a constructor rather than an object literal: V8 tracks a literal's allocation site and, once
 * enough of its objects outlived a young collection (during a bulk change's bursts), allocates
 * every later one straight into the old generation. 100,000 payloads a second then filled the old
 * generation by about 11 MB/s with garbage only a full collection frees (the edge's heap grew to
 * twice its live size between collections in bench/acquisition). Objects made by `new` have no
 * allocation site, so they stay young and die in the scavenges.
 */
export const ReadPayload = function (
  this: ValuePayload,
  datatype: string,
  timestamp: number,
  tag: TagSpec,
  value: TagValue,
) {
  this.success = true;
  this.datatype = datatype;
  this.timestamp = timestamp;
  this.registerId = tag.id;
  this.value = value;
  this.deviceID = tag.deviceId;
  this.deviceName = tag.deviceName;
  this.tagName = tag.tagName;
  this.description = tag.description;
  this.metadata = tag.metadata;
} as unknown as new (datatype: string, timestamp: number, tag: TagSpec, value: TagValue) => ValuePayload;
ReadPayload.prototype = Object.prototype;

const json = (v: unknown) => JSON.stringify(v);

/** `,"deviceID":"…","deviceName":"…"`: the part every tag of a device shares. */
export const devicePart = (deviceId: string, deviceName: string) =>
  `,"deviceID":${json(deviceId)},"deviceName":${json(deviceName)}`;

const heads = new Map<string, string>();
/** `{"success":true,"datatype":"…","timestamp":`, one per data type. */
function headOf(datatype: string): string {
  let head = heads.get(datatype);
  if (head === undefined) {
    head = `{"success":true,"datatype":${json(datatype)},"timestamp":`;
    if (heads.size < 64) heads.set(datatype, head);
  }
  return head;
}

export class ValuePayloadEncoder implements PayloadEncoder, PublishOptions {
  /**
   * The encoder is its own publish options (what the engine hands `publish` with this tag's
   * values): no second object per tag.
   */
  readonly encoder: PayloadEncoder = this;
  readonly #tag: TagSpec;
  readonly #datatype: string;
  readonly #head: string;
  readonly #device: string;
  /** `,"registerId":"…","value":` */
  #mid: string | undefined;
  /** `,"tagName":…,"metadata":{…}}` */
  #tail = '';
  /** The history recorder's state of this tag (`PayloadEncoder.subscriberMemo`). */
  subscriberMemo: unknown = undefined;

  constructor(tag: TagSpec, datatype: string, device: string) {
    this.#tag = tag;
    this.#datatype = datatype;
    this.#head = headOf(datatype);
    this.#device = device;
  }

  encode(data: unknown): Buffer {
    return Buffer.from(this.text(data), 'utf8');
  }

  /** The payload as JSON text (the gateway writes it straight into a connection's buffer). */
  text(data: unknown): string {
    const p = data as ValuePayload;
    const ts = p.timestamp;
    const v = p.value;
    const t = this.#tag;
    // Anything but the shape this encoder was made for is encoded as JSON, field by field.
    if (
      p.success !== true ||
      p.datatype !== this.#datatype ||
      typeof ts !== 'number' ||
      !Number.isFinite(ts) ||
      v === undefined ||
      p.registerId !== t.id
    )
      return json(data);
    if (this.#mid === undefined) {
      // Flat copies: concatenations are rope strings, 5 to 8 nodes of 20 to 32 bytes and their
      // parts per tag (about 300 bytes a tag, 30 MB on a site of 100,000 tags).
      this.#mid = flat(`,"registerId":${json(t.id)},"value":`);
      this.#tail = flat(
        `,"tagName":${json(t.tagName)},"description":${json(t.description)},"metadata":${json(t.metadata)}}`,
      );
    }
    const value = typeof v === 'number' ? (Number.isFinite(v) ? String(v) : 'null') : json(v);
    return this.#head + String(ts) + this.#mid + value + this.#device + this.#tail;
  }

  /** What the engine hands `publish` with this tag's values (the encoder itself). */
  get options(): PublishOptions {
    return this;
  }
}
