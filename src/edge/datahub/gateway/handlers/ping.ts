/** PING (answered with PONG) and PONG (the client answered the server's PING). */
import type { Connection } from '../connection.js';
import { PONG } from '../protocol.js';

export function handlePing(conn: Connection): boolean {
  if (!conn.authorised()) return false;
  conn.writer.write(PONG);
  return true;
}

export function handlePong(conn: Connection): boolean {
  conn.pingsOut = 0;
  return true;
}
