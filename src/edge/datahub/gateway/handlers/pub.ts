/**
 * PUB and HPUB: the control line (`PUB <subject> [reply] <size>`, `HPUB <subject> [reply]
 * <header size> <total size>`) and, once the parser has the payload, its delivery to the bus.
 */
import { InvalidSubjectError } from '../../errors.js';
import { EMPTY } from '../../payload.js';
import { isValidSubject } from '../../subject.js';
import type { Connection } from '../connection.js';
import type { Parser } from '../parser.js';
import { ERR, NO_RESPONDERS, OK, errLine, pubViolation } from '../protocol.js';

export function handlePub(conn: Connection, parser: Parser, buf: Buffer, pos: number, end: number): boolean {
  if (!conn.authorised()) return false;
  const n = parser.split(buf, pos, end);
  if (n !== 2 && n !== 3) return conn.protocolError();
  const size = parser.int(buf, n - 1);
  if (size < 0) return conn.protocolError();
  if (size > conn.core.maxPayload) {
    conn.fail(ERR.maxPayload);
    return false;
  }
  parser.pubSubject = parser.str(buf, 0);
  parser.pubReply = n === 3 ? parser.str(buf, 1) : '';
  parser.pubHdr = -1;
  parser.pubSize = size;
  parser.pubPending = true;
  return true;
}

export function handleHpub(conn: Connection, parser: Parser, buf: Buffer, pos: number, end: number): boolean {
  // HPUB from a client that did not announce headers in CONNECT: closed, as nats-server does.
  if (!conn.headers && conn.connected) return conn.protocolError();
  if (!conn.authorised()) return false;
  const n = parser.split(buf, pos, end);
  if (n !== 3 && n !== 4) return conn.protocolError();
  const hdr = parser.int(buf, n - 2);
  const size = parser.int(buf, n - 1);
  if (hdr < 0 || size < 0 || hdr > size) return conn.protocolError();
  if (size > conn.core.maxPayload) {
    conn.fail(ERR.maxPayload);
    return false;
  }
  parser.pubSubject = parser.str(buf, 0);
  parser.pubReply = n === 4 ? parser.str(buf, 1) : '';
  parser.pubHdr = hdr;
  parser.pubSize = size;
  parser.pubPending = true;
  return true;
}

/** The payload of the pending PUB or HPUB is `buf[pos, pos + size)`: publish it. */
export function deliverPub(conn: Connection, parser: Parser, buf: Buffer, pos: number, size: number): void {
  const subject = parser.pubSubject;
  const reply = parser.pubReply;
  conn.msgsIn++;
  conn.bytesIn += size;
  if (conn.pedantic && (!isValidSubject(subject) || (reply !== '' && !isValidSubject(reply)))) {
    conn.writer.write(errLine(ERR.invalidPublishSubject));
    return;
  }
  if (
    conn.grant !== null &&
    conn.grant.publish !== null &&
    !conn.permissions.mayPublish(conn.grant, subject)
  ) {
    conn.core.permissionDenied(conn, 'publish', subject);
    conn.writer.write(errLine(pubViolation(subject)));
    return;
  }
  let headers: Buffer | undefined;
  let data: Buffer;
  const hdr = parser.pubHdr;
  if (hdr >= 0) {
    headers = hdr > 0 ? buf.subarray(pos, pos + hdr) : undefined;
    data = buf.subarray(pos + hdr, pos + size);
  } else {
    data = size === 0 ? EMPTY : buf.subarray(pos, pos + size);
  }
  // +OK goes before the message reaches this connection's own subscriptions, as in nats-server.
  if (conn.verbose) conn.writer.write(OK);
  let delivered: number;
  try {
    delivered = conn.core.hub.dispatch(subject, data, reply, headers, conn, true);
  } catch (err) {
    // Not pedantic: a subject that is not valid reaches nobody, silently (as in nats-server).
    if (err instanceof InvalidSubjectError) return;
    throw err;
  }
  if (delivered === 0 && reply !== '' && conn.noResponders && !conn.core.external) {
    conn.core.hub.dispatch(reply, EMPTY, '', NO_RESPONDERS, undefined, false);
  }
}
