/** SUB `<subject> [queue group] <sid>`: a subscription on the bus that writes MSGs to the client. */
import { isValidPattern } from '../../subject.js';
import type { Connection, SubContext } from '../connection.js';
import type { Parser } from '../parser.js';
import { ERR, OK, errLine, subViolation } from '../protocol.js';

export function handleSub(conn: Connection, parser: Parser, buf: Buffer, pos: number, end: number): boolean {
  if (!conn.authorised()) return false;
  const n = parser.split(buf, pos, end);
  if (n !== 2 && n !== 3) return conn.protocolError();
  const subject = parser.str(buf, 0);
  const queue = n === 3 ? parser.str(buf, 1) : undefined;
  const sid = parser.str(buf, n - 1);
  if (!isValidPattern(subject)) {
    conn.writer.write(errLine(ERR.invalidSubject));
    return true;
  }
  if (!conn.permissions.maySubscribe(conn.grant, subject)) {
    conn.core.permissionDenied(conn, 'subscribe', subject);
    conn.writer.write(errLine(subViolation(subject, queue)));
    return true;
  }
  if (conn.subs.has(sid)) {
    if (conn.verbose) conn.writer.write(OK);
    return true;
  }
  const ctx: SubContext = { sid, sidBytes: Buffer.from(sid, 'utf8') };
  const s = conn.core.hub.subscribe(subject, {
    ...(queue === undefined ? {} : { queue }),
    callback: conn.onMsg,
    owner: ctx,
    ...(conn.echo ? {} : { skipOrigin: conn }),
  });
  conn.subs.set(sid, s);
  if (conn.verbose) conn.writer.write(OK);
  return true;
}
