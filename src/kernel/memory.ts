/**
 * Memory after bulk changes. A bulk change (10,000 tags created in one request, a configuration
 * template applied) leaves its garbage in V8's old generation: request bodies, validation and
 * rows that lived across the database writes. V8 collects the old generation only when it
 * reaches a limit it sets from the heap's size, and on a busy edge (values published all the
 * time) the idle-time memory reducer never runs, so that garbage is held for minutes: the edge of
 * `bench/acquisition` held about 250 MiB of heap, of which about 110 MiB live, right after setting
 * up 100,000 tags.
 *
 * `noteBulkChange(items)` schedules a full collection once bulk changes have settled: when a
 * change touched at least `BULK_CHANGE_ITEMS` items, 2 s after the last such change and once more
 * 3 s later (what the first pass found still young), at most one round every 10 s. Each pause is
 * that of one full collection of the live heap, marked inside the pause (V8's `gc` does not mark
 * incrementally): 115 ms for the 120 MiB live of an edge with 100,000 polled tags on two cores at
 * load 3, several hundred at load 10. So a pass waits until the HTTP API has been quiet for
 * `QUIET_MS` (no response in that time: `noteResponse`, from the HTTP server), at most
 * `MAX_DEFER_MS` (2 minutes): a client paging through the tags it just uploaded is not paused;
 * the data plane (values each second) is. The collector is V8's own `gc` (`--expose-gc`, set at
 * run time for a context made for it); where the runtime refuses, nothing is scheduled.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Changes smaller than this leave too little garbage to be worth a collection. */
export const BULK_CHANGE_ITEMS = 1000;
const SETTLE_MS = 2000;
const SECOND_PASS_MS = 3000;
const MIN_INTERVAL_MS = 10_000;
/** A pass waits until no HTTP response was sent for this long... */
export const QUIET_MS = 1000;
/** ...but not longer than this after it was due. */
export const MAX_DEFER_MS = 120_000;

type Collector = () => void;

let collector: Collector | null | undefined;
let timer: NodeJS.Timeout | undefined;
let lastRun = -Infinity;
let runs = 0;
let lastResponse = -Infinity;

function gc(): Collector | null {
  if (collector === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const fn: unknown = runInNewContext('gc');
      collector = typeof fn === 'function' ? (fn as Collector) : null;
    } catch {
      collector = null;
    }
  }
  return collector;
}

function collect(): void {
  runs++;
  collector?.();
}

/** The HTTP server sent a response (the API is in use: a collection waits). */
export function noteResponse(): void {
  lastResponse = Date.now();
}

/** Runs `pass` once the API has been quiet for `QUIET_MS`, or at `deadline` at the latest. */
function whenQuiet(pass: () => void, deadline: number): void {
  const now = Date.now();
  const quietFor = now - lastResponse;
  if (quietFor >= QUIET_MS || now >= deadline) return pass();
  timer = setTimeout(() => whenQuiet(pass, deadline), Math.min(QUIET_MS - quietFor, deadline - now));
  timer.unref();
}

/** A change of `items` devices, tags or other records was committed. */
export function noteBulkChange(items: number): void {
  if (items < BULK_CHANGE_ITEMS || !gc()) return;
  if (timer) clearTimeout(timer);
  const wait = Math.max(SETTLE_MS, lastRun + MIN_INTERVAL_MS - Date.now());
  const first = () => {
    lastRun = Date.now();
    collect();
    // A second pass collects what the first found still young (the last requests' objects); V8
    // gives the freed pages back to the system in the background.
    timer = setTimeout(() => whenQuiet(second, Date.now() + MAX_DEFER_MS), SECOND_PASS_MS);
    timer.unref();
  };
  const second = () => {
    timer = undefined;
    collect();
  };
  timer = setTimeout(() => whenQuiet(first, Date.now() + MAX_DEFER_MS), wait);
  timer.unref();
}

/** How many collections ran (for tests and metrics). */
export function bulkCollections(): number {
  return runs;
}
