/**
 * `TagValues`: the status and value of chosen tags over a GraphQL subscription, for clients that
 * have no NATS connection (the browser console). Bounded per subscription: at most 1,000 tags,
 * sampled at most every 250 ms; each message carries only the tags that changed since the last
 * one (the first carries all), and a client slower than the samples gets the latest state of each
 * tag, never a growing queue.
 */
import { badRequest } from '../../kernel/errors.js';
import type { DeviceHubService } from './service.js';
import type { TagStatus } from './types.js';

export const TAG_VALUES_MAX_IDS = 1000;
export const TAG_VALUES_MIN_INTERVAL_MS = 250;
export const TAG_VALUES_MAX_INTERVAL_MS = 60_000;

export interface TagValuesRequest {
  IDs: string[];
  IntervalMs?: number | null;
}

type Message = { TagValues: TagStatus[] };

const keyOf = (s: TagStatus) =>
  `${s.State}|${s.UpdateTime ?? ''}|${s.Timestamp ?? ''}|${JSON.stringify(s.Value)}`;

/** Checks the request; throws a 400 for what it refuses. */
export function checkTagValuesRequest(input: TagValuesRequest): number {
  const every = input.IntervalMs ?? 1000;
  if (!Number.isInteger(every) || every < TAG_VALUES_MIN_INTERVAL_MS || every > TAG_VALUES_MAX_INTERVAL_MS) {
    throw badRequest(
      `IntervalMs must be an integer from ${TAG_VALUES_MIN_INTERVAL_MS} to ${TAG_VALUES_MAX_INTERVAL_MS}, got ${String(input.IntervalMs)}`,
    );
  }
  if (input.IDs.length > TAG_VALUES_MAX_IDS) {
    throw badRequest(`IDs takes at most ${TAG_VALUES_MAX_IDS} tags, got ${input.IDs.length}`);
  }
  return every;
}

/** The subscription's messages; sampling stops when the client goes away (`return`). */
export function tagValuesFeed(
  devicehub: DeviceHubService,
  input: TagValuesRequest,
): AsyncIterableIterator<Message> {
  const every = checkTagValuesRequest(input);
  const ids = [...new Set(input.IDs)];
  const last = new Map<string, string>();
  // Changes not yet taken by the client, latest state per tag (bounded by the number of tags).
  const pending = new Map<string, TagStatus>();
  let waiter: ((r: IteratorResult<Message>) => void) | undefined;
  let done = false;
  let failure: unknown;
  const flush = () => {
    if (!waiter || (pending.size === 0 && failure === undefined)) return;
    const w = waiter;
    waiter = undefined;
    if (failure !== undefined) {
      done = true;
      clearInterval(timer);
      w({ value: undefined, done: true });
      return;
    }
    const out = [...pending.values()];
    pending.clear();
    w({ value: { TagValues: out }, done: false });
  };
  let sampling = false;
  const sample = async () => {
    if (done || sampling) return;
    sampling = true;
    try {
      for (const s of await devicehub.tagStatus(ids)) {
        const k = keyOf(s);
        if (last.get(s.ID) === k) continue;
        last.set(s.ID, k);
        pending.set(s.ID, s);
      }
    } catch (err) {
      failure = err;
    } finally {
      sampling = false;
    }
    flush();
  };
  const timer = setInterval(() => void sample(), every);
  void sample();
  const finish = (): Promise<IteratorResult<Message>> => {
    done = true;
    clearInterval(timer);
    waiter?.({ value: undefined, done: true });
    waiter = undefined;
    return Promise.resolve({ value: undefined, done: true });
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => {
      if (done) return Promise.resolve({ value: undefined, done: true });
      if (failure !== undefined) return Promise.reject(failure);
      return new Promise<IteratorResult<Message>>((resolve) => {
        waiter = resolve;
        flush();
      });
    },
    return: finish,
  };
}
