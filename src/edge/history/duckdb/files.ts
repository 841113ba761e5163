/**
 * The embedded store's files in its directory (names, sizes, removal) and the typed-array moves in
 * and out of DuckDB's data chunks. No SQL here: that is in repository.ts.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  DOUBLE,
  DuckDBDataChunk,
  INTEGER,
  type DuckDBAppender,
  type DuckDBMaterializedResult,
} from '@duckdb/node-api';

export type FileKind = 'hot' | 'seg';

export function dbPath(dir: string, kind: FileKind, n: number): string {
  return join(dir, `${kind}-${n}.duckdb`);
}

/** The numbers of a kind's files in the directory, ascending. */
export function numbered(dir: string, kind: FileKind): number[] {
  const re = new RegExp(`^${kind}-(\\d+)\\.duckdb$`);
  const out: number[] = [];
  for (const name of readdirSync(dir)) {
    const m = re.exec(name);
    if (m) out.push(Number(m[1]));
  }
  return out.sort((a, b) => a - b);
}

export function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** A database file and its write-ahead log. */
export function dbBytes(path: string): number {
  return fileSize(path) + fileSize(`${path}.wal`);
}

/** Every file in the store's directory (databases, write-ahead logs, anything else): its size on disk. */
export function dirBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) total += fileSize(join(dir, name));
  return total;
}

export function removeDb(path: string): void {
  rmSync(path, { force: true });
  rmSync(`${path}.wal`, { force: true });
}

interface ItemsVector {
  items: Int32Array | Float64Array;
  flush(): void;
}

/** Appends rows (tag, ts, v) from typed arrays, a data chunk (2,048 rows) at a time. */
export function appendColumns(
  app: DuckDBAppender,
  tag: Int32Array,
  ts: Float64Array,
  v: Float64Array,
  n: number,
): void {
  const chunk = DuckDBDataChunk.create([INTEGER, DOUBLE, DOUBLE]);
  for (let off = 0; off < n; off += 2048) {
    const m = Math.min(2048, n - off);
    chunk.reset();
    chunk.rowCount = m;
    const cols = [tag, ts, v];
    for (let c = 0; c < 3; c++) {
      // The vector's items are its data buffer's copy: set them, then flush them to the vector.
      const vec = chunk.getColumnVector(c) as unknown as ItemsVector;
      vec.items.set(cols[c]!.subarray(off, off + m));
      vec.flush();
    }
    app.appendDataChunk(chunk);
  }
}

/** The DOUBLE columns of a result (no NULLs: the SQL coalesces them to NaN), as typed arrays. */
export function readDoubles(result: DuckDBMaterializedResult, columns: number): Float64Array[] {
  const out = Array.from({ length: columns }, () => new Float64Array(result.rowCount));
  let at = 0;
  for (let k = 0; k < result.chunkCount; k++) {
    const chunk = result.getChunk(k);
    for (let c = 0; c < columns; c++) {
      // The vector's items: a view of the chunk's data (copied into the column here).
      out[c]!.set((chunk.getColumnVector(c) as unknown as ItemsVector).items, at);
    }
    at += chunk.rowCount;
  }
  return out;
}
