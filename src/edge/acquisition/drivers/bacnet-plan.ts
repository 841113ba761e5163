/**
 * The BACnet/IP driver's read plan (pure): the properties due are grouped by object and packed into
 * as few ReadPropertyMultiple requests as the device's maximum APDU allows, so that each answer
 * fits in one unsegmented APDU. The answer's size is estimated from the encoding (ASHRAE 135
 * clause 21: an object identifier, opening and closing tags, a context-tagged property identifier
 * and the value or an error per property); a request the device still refuses as too long (an
 * Abort "segmentation not supported", "buffer overflow" or "APDU too long") is split in two by the
 * driver and the plan keeps the halves.
 *
 * Answers are never asked segmented: the library reassembles segments in one store for the whole
 * socket (not per invoke id), which pipelined requests would mix up; unsegmented answers of at most
 * the device's APDU make pipelining safe and need no segmentation support at either end.
 */
import type { BACNetObjectID } from '@bacnet-js/client';

export const PRESENT_VALUE = 85;
/** The largest APDU of BACnet/IP (ASHRAE 135 Annex J: 1476 octets). */
export const MAX_APDU_BIP = 1476;
/** The APDU sizes a confirmed request can announce it accepts (MaxApduLengthAccepted codes 0-5). */
const APDU_SIZES = [50, 128, 206, 480, 1024, 1476];

/** The MaxApduLengthAccepted code of the largest size not above `bytes`. */
export function apduCode(bytes: number): number {
  let code = 0;
  for (let i = 0; i < APDU_SIZES.length; i++) if (APDU_SIZES[i]! <= bytes) code = i;
  return code;
}

export interface Ref {
  object: BACNetObjectID;
  property: number;
}

/** One property of one object in a request, and the tags (indexes) it serves. */
interface PlannedProperty {
  id: number;
  tags: number[];
}
interface PlannedObject {
  objectId: BACNetObjectID;
  props: PlannedProperty[];
}

/** One ReadPropertyMultiple: its request list (built once, reused each cycle) and what it serves. */
export interface Batch {
  objects: PlannedObject[];
  /** The library's request argument. */
  spec: Array<{ objectId: BACNetObjectID; properties: Array<{ id: number; index: number }> }>;
  /** Properties in the request. */
  size: number;
  /** Estimated bytes of the answer's service data. */
  bytes: number;
}

const ALL = 0xffffffff;

/** Bytes a property's value takes in an answer (its application tag and data), an estimate. */
export function valueBytes(ref: Ref, valueType: string, length: number): number {
  if (valueType === 'string') return Math.max(length, 16) * 2 + 5;
  if (ref.property !== PRESENT_VALUE) return 32;
  if (valueType === 'float64') return 10;
  return 5; // REAL, ENUMERATED, Unsigned or Signed of up to 32 bits; an error at most 5 beyond its tags (below)
}

/** Answer bytes of an object's head and tail: object identifier (5), opening and closing tag [1]. */
const OBJECT_BYTES = 7;
/** Answer bytes around a property's value: context tag [2] with the identifier, opening and closing tag [4]. */
const propertyBytes = (id: number) => (id < 256 ? 4 : id < 65536 ? 5 : 7);
/** An error instead of the value, beyond the bytes counted for tag [4]: its tag [5] instead, class and code (2-3 bytes each). */
const ERROR_BYTES = 5;

export interface PlanInput {
  /** Tag index and where it reads. */
  refs: Array<{ i: number; ref: Ref; bytes: number }>;
  /** The answer's service data must fit in this many bytes. */
  budget: number;
  /** At most this many properties a request (0: no limit but the budget). */
  maxProperties: number;
}

/** Packs the properties into batches in the tags' order (one object's properties stay together). */
export function planBatches({ refs, budget, maxProperties }: PlanInput): Batch[] {
  const objects = new Map<
    string,
    { objectId: BACNetObjectID; props: Map<number, PlannedProperty & { bytes: number }> }
  >();
  for (const { i, ref, bytes } of refs) {
    const k = `${ref.object.type}:${ref.object.instance}`;
    let o = objects.get(k);
    if (!o) objects.set(k, (o = { objectId: ref.object, props: new Map() }));
    const p = o.props.get(ref.property);
    if (p) {
      p.tags.push(i);
      p.bytes = Math.max(p.bytes, bytes);
    } else o.props.set(ref.property, { id: ref.property, tags: [i], bytes });
  }
  const limit = maxProperties > 0 ? maxProperties : Number.POSITIVE_INFINITY;
  const batches: Batch[] = [];
  let cur: Batch | undefined;
  const fresh = (): Batch => {
    const b: Batch = { objects: [], spec: [], size: 0, bytes: 0 };
    batches.push(b);
    return b;
  };
  for (const o of objects.values()) {
    let planned: PlannedObject | undefined;
    for (const p of o.props.values()) {
      const cost = propertyBytes(p.id) + Math.max(p.bytes, ERROR_BYTES);
      const head = planned ? 0 : OBJECT_BYTES;
      if (!cur || (cur.size > 0 && (cur.size + 1 > limit || cur.bytes + head + cost > budget))) {
        cur = fresh();
        planned = undefined;
      }
      if (!planned) {
        planned = { objectId: o.objectId, props: [] };
        cur.objects.push(planned);
        cur.spec.push({ objectId: o.objectId, properties: [] });
        cur.bytes += OBJECT_BYTES;
      }
      planned.props.push({ id: p.id, tags: p.tags });
      cur.spec[cur.spec.length - 1]!.properties.push({ id: p.id, index: ALL });
      cur.size++;
      cur.bytes += cost;
    }
  }
  return batches;
}

/** Splits a batch in two halves of its properties (a request the device found too long). */
export function splitBatch(b: Batch): [Batch, Batch] {
  const flat: Array<{ objectId: BACNetObjectID; p: PlannedProperty }> = [];
  for (const o of b.objects) for (const p of o.props) flat.push({ objectId: o.objectId, p });
  const half = Math.ceil(flat.length / 2);
  const build = (part: typeof flat): Batch => {
    const out: Batch = { objects: [], spec: [], size: part.length, bytes: 0 };
    for (const { objectId, p } of part) {
      let o = out.objects[out.objects.length - 1];
      if (!o || o.objectId !== objectId) {
        o = { objectId, props: [] };
        out.objects.push(o);
        out.spec.push({ objectId, properties: [] });
      }
      o.props.push(p);
      out.spec[out.spec.length - 1]!.properties.push({ id: p.id, index: ALL });
    }
    out.bytes = Math.ceil((b.bytes * part.length) / Math.max(1, b.size));
    return out;
  };
  return [build(flat.slice(0, half)), build(flat.slice(half))];
}

/**
 * An Abort (or Reject: the library reports both as `BacnetAbort`) that says the request or its
 * answer was too long for the device: 1 buffer overflow, 4 segmentation not supported, 11 APDU too
 * long.
 */
export function tooLong(message: string): boolean {
  const m = /BacnetAbort - Reason:(\d+)/.exec(message);
  if (!m) return false;
  const reason = Number(m[1]);
  return reason === 1 || reason === 4 || reason === 11;
}
