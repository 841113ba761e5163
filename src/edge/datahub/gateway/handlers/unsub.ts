/** UNSUB `<sid> [max]`: ends a subscription now, or after `max` messages in all. */
import type { Connection } from '../connection.js';
import type { Parser } from '../parser.js';
import { OK } from '../protocol.js';

export function handleUnsub(
  conn: Connection,
  parser: Parser,
  buf: Buffer,
  pos: number,
  end: number,
): boolean {
  if (!conn.authorised()) return false;
  const n = parser.split(buf, pos, end);
  if (n !== 1 && n !== 2) return conn.protocolError();
  const sid = parser.str(buf, 0);
  const max = n === 2 ? parser.int(buf, 1) : 0;
  if (max < 0) return conn.protocolError();
  const s = conn.subs.get(sid);
  if (s) {
    if (max > 0) s.autoUnsubscribe(max);
    else s.unsubscribe();
    if (s.closed) conn.subs.delete(sid);
  }
  if (conn.verbose) conn.writer.write(OK);
  return true;
}
