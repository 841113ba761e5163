/**
 * The JSON documents of a ZIP archive (`PUT /template/upload-zip`): a reader of the central
 * directory (stored and deflated entries; no ZIP64, no encryption), bounded in entries and in
 * bytes inflated, so that a small archive cannot expand without limit.
 */
import { inflateRawSync } from 'node:zlib';
import { badRequest } from '../../kernel/errors.js';

export interface ZipEntry {
  name: string;
  data: Buffer;
}

export function readZip(buf: Buffer, limits: { maxEntries: number; maxBytes: number }): ZipEntry[] {
  const bad = (m: string) => badRequest(`not a readable ZIP archive: ${m}`);
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw bad('no end of central directory');
  const count = buf.readUInt16LE(eocd + 10);
  const cdOffset = buf.readUInt32LE(eocd + 16);
  if (count > limits.maxEntries)
    throw badRequest(`the archive has ${count} entries; at most ${limits.maxEntries}`);
  const out: ZipEntry[] = [];
  let total = 0;
  let p = cdOffset;
  for (let n = 0; n < count; n++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) throw bad('damaged central directory');
    const flags = buf.readUInt16LE(p + 8);
    const method = buf.readUInt16LE(p + 10);
    const compSize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    p += 46 + nameLen + extraLen + commentLen;
    if (name.endsWith('/')) continue;
    if (flags & 1) throw bad(`entry "${name}" is encrypted`);
    if (local + 30 > buf.length || buf.readUInt32LE(local) !== 0x04034b50)
      throw bad(`entry "${name}" damaged`);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(start, start + compSize);
    if (raw.length !== compSize) throw bad(`entry "${name}" is truncated`);
    total += size;
    if (total > limits.maxBytes)
      throw badRequest(`the archive expands to more than ${limits.maxBytes} bytes`);
    let data: Buffer;
    if (method === 0) data = raw;
    else if (method === 8) {
      try {
        data = inflateRawSync(raw, { maxOutputLength: limits.maxBytes });
      } catch (err) {
        throw bad(`entry "${name}": ${(err as Error).message}`);
      }
    } else throw bad(`entry "${name}" uses compression method ${method} (only stored and deflate are read)`);
    if (data.length !== size)
      throw bad(`entry "${name}" has ${data.length} bytes, the directory says ${size}`);
    out.push({ name, data });
  }
  return out;
}
