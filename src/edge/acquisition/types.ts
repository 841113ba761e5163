/**
 * Shapes shared by the acquisition engine and its drivers: a device and its tags as the engine
 * runs them (taken from the DeviceHub's read model), and the contract a driver implements.
 */
import type { Logger } from 'pino';
import type { BrowseNode, DeviceConfig, DriverDef } from '../devicehub/index.js';
import type { Formula } from './formula.js';

/** A value as a driver reads it (before the tag formula). */
export type TagValue = number | bigint | boolean | string | Record<string, unknown> | unknown[] | null;

export interface DeviceSpec {
  id: string;
  name: string;
  driver: DriverDef;
  /** Device properties, defaults filled in (strings, as stored). */
  props: Record<string, string>;
  aliasTopics: boolean;
}

export interface TagSpec {
  id: string;
  deviceId: string;
  deviceName: string;
  tagName: string;
  /** The driver's register (`HR`, `S`, `Node`, `Topic`...). */
  register: string;
  description: string;
  valueType: string;
  publishCoV: boolean;
  formula: Formula | null;
  intervalMs: number;
  /** Tag properties, defaults filled in. */
  props: Record<string, string>;
  metadata: Record<string, unknown>;
  /** Precomputed subjects. */
  rawSubject: string;
  aliasSubject: string | null;
  /** Made on first use (only while someone subscribes to value subjects, or on a write). */
  valueSubject: string | undefined;
  writeResponseSubject: string | undefined;
}

/** The outcome of reading one tag: a value, or the reason it could not be read. */
export class ReadFailure {
  constructor(readonly reason: string) {}
}

export type ReadResult = TagValue | ReadFailure;

/** Called by a push driver (subscriptions) for each value it receives. */
export type ValueSink = (tag: TagSpec, value: ReadResult, timestamp: number) => void;

export interface DriverContext {
  logger: Logger | undefined;
  /** A folder this driver may keep files in (certificates...). */
  dataDir: string;
  /** The CA certificates of the edge's trust store (PEM, read at each connect). */
  trustedCertificates?(): readonly string[];
  /** The driver calls this when the connection is lost after `connect` succeeded. */
  lost(reason: string): void;
}

/** One connection to one device. The engine serialises `connect`/`close`; reads may overlap writes. */
export interface DriverSession {
  /** Opens the connection; rejects with a reason people can read. */
  connect(): Promise<void>;
  /** Closes the connection; never rejects. */
  close(): Promise<void>;
  /**
   * Reads the tags (all due at the same time; the driver coalesces them into as few requests as
   * it can). Answers one result per tag, in order. Rejects only when the connection is unusable.
   * A driver that reads in several requests may hand each result over as soon as its request is
   * answered (`early(index, result)`): the engine publishes it at once (smaller bursts, lower
   * latency) and ignores that index in the answer.
   */
  read(tags: readonly TagSpec[], early?: (index: number, result: ReadResult) => void): Promise<ReadResult[]>;
  /** Writes a value (already converted from JSON) to a tag; rejects with the device's error. */
  write(tag: TagSpec, value: unknown): Promise<void>;
  /**
   * Push drivers: the tags whose values arrive by subscription instead of polling. Called after
   * `connect` and whenever the tag set changes; answers the tags the engine must still poll.
   */
  watch?(tags: readonly TagSpec[], sink: ValueSink): Promise<readonly TagSpec[]>;
}

export interface DriverFactory {
  /** Catalogue key of the driver (`modbus-tcp`, `generator`...). */
  key: string;
  create(device: DeviceSpec, ctx: DriverContext): DriverSession;
  /** Browsing the device's address space, for drivers that can. */
  browse?(
    device: DeviceConfig,
    driver: DriverDef,
    ctx: { dataDir: string; trustedCertificates?(): readonly string[] },
  ): Promise<BrowseNode[]>;
}
