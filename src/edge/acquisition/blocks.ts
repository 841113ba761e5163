/**
 * Coalescing: items at neighbouring addresses become one block read, as long as the block stays
 * within the driver's maximum size. Items larger than the maximum get a block of their own.
 */
export interface Block<T> {
  start: number;
  count: number;
  items: T[];
}

/**
 * Groups `items` (each covering `count` addresses from `start`) into blocks of at most `maxCount`
 * addresses; holes of up to `maxGap` unused addresses may be read to join two neighbours.
 */
export function coalesce<T>(
  items: readonly T[],
  span: (item: T) => { start: number; count: number },
  maxCount: number,
  maxGap = 0,
): Block<T>[] {
  const sorted = items
    .map((item) => ({ item, ...span(item) }))
    .sort((a, b) => a.start - b.start || b.count - a.count);
  const blocks: Block<T>[] = [];
  let cur: Block<T> | undefined;
  let end = 0;
  for (const s of sorted) {
    const itemEnd = s.start + s.count;
    if (cur && s.start <= end + maxGap && Math.max(end, itemEnd) - cur.start <= maxCount) {
      cur.items.push(s.item);
      end = Math.max(end, itemEnd);
      cur.count = end - cur.start;
      continue;
    }
    cur = { start: s.start, count: s.count, items: [s.item] };
    end = itemEnd;
    blocks.push(cur);
  }
  return blocks;
}
