/**
 * The messages between the edge's main thread and the OPC UA server's worker thread (see
 * server.ts for the main side, ua-worker.ts for the worker). node-opcua runs in the worker: its
 * import, the standard nodeset it loads and the address space it builds take seconds of CPU
 * that would otherwise stall the edge's event loop (HTTP, the DataHub, acquisition).
 */
import type { CertificateGroup, CertificateInfo, OpcuaNode, ServerSettings } from './types.js';

/** What the worker starts with (`workerData`). */
export interface UaWorkerData {
  port: number;
  host: string;
  pkiDir: string;
  settings: ServerSettings;
  productUri: string;
  buildVersion: string;
}

/** A tag value as the worker needs it (the DataHub payload's fields it reads). */
export interface UaValue {
  registerId: string;
  value: unknown;
  success: boolean;
  timestamp: number | null;
}

/**
 * Tag values on their way to the worker, in columns: entry `i` of each array is one value. Gathered
 * and posted as 5,000 `UaValue` objects they cost the main thread 1.8-2.9 ms of CPU per batch (the
 * structured clone writes each object's four keys again), in four flat arrays 0.6-0.9 ms
 * (microbenchmark, the worker not reading); at 100,000 values/s that is 2-4% of a core, and the
 * values' `postMessage` was the largest single cost of the data plane in bench/devicehub's profile.
 */
export interface UaValueBatch {
  registerIds: string[];
  values: unknown[];
  /** False: the read failed (the node keeps its last value, with a Bad status). */
  success: boolean[];
  /** Milliseconds since the epoch; NaN for a value without a timestamp. */
  timestamps: number[];
}

/** The values of a batch, one `UaValue` each (in the worker). */
export function* batchValues(b: UaValueBatch): Generator<UaValue> {
  for (let i = 0; i < b.registerIds.length; i++) {
    const t = b.timestamps[i]!;
    yield {
      registerId: b.registerIds[i]!,
      value: b.values[i],
      success: b.success[i]!,
      timestamp: Number.isNaN(t) ? null : t,
    };
  }
}

/** The answer to a write, as the name of an OPC UA status code. */
export type UaWriteStatus =
  | 'Good'
  | 'BadNodeIdUnknown'
  | 'BadNoCommunication'
  | 'BadDeviceFailure'
  | 'BadNotConnected'
  | 'BadTimeout'
  | 'BadInternalError';

export type UaRpc =
  | { op: 'move'; thumbprint: string; to: CertificateGroup }
  | { op: 'delete'; thumbprint: string }
  | { op: 'maxSessions' }
  | { op: 'shutdown' };

export type ToWorker =
  /** The reserved port is released: the server may bind it. */
  | { t: 'bind' }
  /** A new tree: `begin`, nodes in chunks, `end` (then the address space is brought in line). */
  | { t: 'tree-begin'; seq: number }
  | { t: 'tree-chunk'; nodes: OpcuaNode[] }
  | { t: 'tree-end'; seq: number }
  | { t: 'values'; batch: UaValueBatch }
  | { t: 'settings'; settings: ServerSettings }
  | { t: 'user'; id: number; ok: boolean }
  | { t: 'written'; id: number; status: UaWriteStatus }
  | { t: 'rpc'; id: number; call: UaRpc };

export interface UaFolders {
  trusted: string;
  rejected: string;
  own: string;
}

export type FromWorker =
  /** node-opcua is loaded and initialised: release the port reservation and say `bind`. */
  | { t: 'bind' }
  | { t: 'listening'; port: number; endpointUrl: string; folders: UaFolders }
  /** The address space holds tree `seq` (`nodes` mounted). */
  | { t: 'reconciled'; seq: number; nodes: number; ms: number }
  | { t: 'failed'; error: string }
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; msg: string; data: Record<string, unknown> }
  | { t: 'user'; id: number; username: string; password: string }
  | { t: 'write'; id: number; tagId: string; value: unknown }
  | { t: 'rpc'; id: number; ok: true; value: unknown }
  | { t: 'rpc'; id: number; ok: false; error: string; status?: number };

export type { CertificateInfo };
