/**
 * The op switch: recognises the op word of a control line (case-insensitive, as nats-server) and
 * hands the line to the handler of that operation, one file per operation, as aedes has one
 * handler per packet type. Answers false to stop the parser (closed, or waiting for a key check).
 */
import type { Connection } from '../connection.js';
import { matchWord, ws, type Parser } from '../parser.js';
import { ERR } from '../protocol.js';
import { handleConnect } from './connect.js';
import { handlePing, handlePong } from './ping.js';
import { handleHpub, handlePub } from './pub.js';
import { handleSub } from './sub.js';
import { handleUnsub } from './unsub.js';

export function dispatchOp(conn: Connection, parser: Parser, buf: Buffer, pos: number, end: number): boolean {
  const c0 = buf[pos]! | 0x20;
  const c1 = (buf[pos + 1] ?? 0) | 0x20;
  if (c0 === 0x70 /* p */) {
    const c2 = (buf[pos + 2] ?? 0) | 0x20;
    const c3 = (buf[pos + 3] ?? 0) | 0x20;
    if (c1 === 0x75 && c2 === 0x62 && ws(buf, pos + 3, end) && end > pos + 3)
      return handlePub(conn, parser, buf, pos + 3, end);
    if (c1 === 0x69 && c2 === 0x6e && c3 === 0x67 && ws(buf, pos + 4, end)) return handlePing(conn);
    if (c1 === 0x6f && c2 === 0x6e && c3 === 0x67 && ws(buf, pos + 4, end)) return handlePong(conn);
  } else if (c0 === 0x68 /* h */) {
    if (matchWord(buf, pos, 'hpub') && ws(buf, pos + 4, end) && end > pos + 4)
      return handleHpub(conn, parser, buf, pos + 4, end);
  } else if (c0 === 0x73 /* s */) {
    if (c1 === 0x75 && ((buf[pos + 2] ?? 0) | 0x20) === 0x62 && ws(buf, pos + 3, end))
      return handleSub(conn, parser, buf, pos + 3, end);
  } else if (c0 === 0x75 /* u */) {
    if (matchWord(buf, pos, 'unsub') && ws(buf, pos + 5, end))
      return handleUnsub(conn, parser, buf, pos + 5, end);
  } else if (c0 === 0x63 /* c */) {
    if (matchWord(buf, pos, 'connect') && ws(buf, pos + 7, end))
      return handleConnect(conn, buf.toString('utf8', pos + 7, end));
  }
  conn.fail(ERR.unknownOp);
  return false;
}
