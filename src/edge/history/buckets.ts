/**
 * Buckets of aggregate queries: a bucket width chosen from the range and a point budget (a "nice"
 * width, so that buckets start on round times), or one the caller gives, bounded either way.
 */
import { badRequest } from '../../kernel/errors.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Bucket widths a chosen bucket rounds up to (ms). */
export const NICE_WIDTHS: readonly number[] = [
  1,
  2,
  5,
  10,
  20,
  50,
  100,
  200,
  500,
  SECOND,
  2 * SECOND,
  5 * SECOND,
  10 * SECOND,
  15 * SECOND,
  30 * SECOND,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
  2 * DAY,
  7 * DAY,
  14 * DAY,
  30 * DAY,
  90 * DAY,
  365 * DAY,
];

/** Buckets one aggregate query answers at most, per tag. */
export const MAX_BUCKETS = 10_000;
/** Default point budget of an aggregate query. */
export const DEFAULT_POINTS = 1000;

/** The smallest nice width that splits `[from, to)` into at most `points` buckets. */
export function chooseBucket(from: number, to: number, points: number = DEFAULT_POINTS): number {
  const span = Math.max(1, to - from);
  const want = span / Math.max(1, Math.min(points, MAX_BUCKETS));
  for (const w of NICE_WIDTHS) if (w >= want) return w;
  return Math.ceil(want / DAY) * DAY;
}

/** The bucket of a query: `bucketMs` when given (checked), else chosen from `points`. */
export function bucketOf(
  from: number,
  to: number,
  points: number | undefined,
  bucketMs: number | undefined,
): number {
  if (points !== undefined && (!Number.isInteger(points) || points < 1 || points > MAX_BUCKETS))
    throw badRequest(`points must be an integer from 1 to ${MAX_BUCKETS}, got ${String(points)}`);
  if (bucketMs === undefined) return chooseBucket(from, to, points);
  if (!Number.isInteger(bucketMs) || bucketMs < 1)
    throw badRequest(`bucket must be a positive integer of milliseconds, got ${String(bucketMs)}`);
  if ((to - from) / bucketMs > MAX_BUCKETS)
    throw badRequest(
      `bucket ${bucketMs} ms makes more than ${MAX_BUCKETS} buckets over the range; choose a wider bucket or a shorter range`,
    );
  return bucketMs;
}
