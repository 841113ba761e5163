/**
 * CONNECT `{json}`: the client's options and, for a remote client, its access key (checked
 * through the gateway, possibly asynchronously: the parser holds what arrives meanwhile).
 */
import type { Subscription } from '../../bus.js';
import type { Connection, SubContext } from '../connection.js';
import { ERR, OK, type ConnectOptions } from '../protocol.js';
import type { AccessGrant } from '../server.js';

export function handleConnect(conn: Connection, json: string): boolean {
  let opts: ConnectOptions;
  try {
    const parsed: unknown = JSON.parse(json);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    opts = parsed as ConnectOptions;
  } catch {
    // nats-server closes the socket without a word on a CONNECT it cannot read.
    conn.close('unparsable CONNECT');
    return false;
  }
  // nats-server's defaults when CONNECT does not say: verbose, pedantic and echo on.
  conn.verbose = opts.verbose ?? true;
  conn.pedantic = opts.pedantic ?? true;
  conn.echo = opts.echo ?? true;
  conn.headers = opts.headers === true;
  conn.noResponders = opts.no_responders === true;
  conn.name = typeof opts.name === 'string' ? opts.name : '';
  conn.lang = typeof opts.lang === 'string' ? opts.lang : '';
  conn.version = typeof opts.version === 'string' ? opts.version : '';
  if (opts.protocol !== undefined && (opts.protocol < 0 || opts.protocol > 1)) {
    conn.fail(ERR.invalidProtocol);
    return false;
  }
  if (conn.noResponders && !conn.headers) {
    conn.fail(ERR.noRespondersNeedsHeaders);
    return false;
  }
  if (!conn.echo) for (const s of conn.subs.values()) resubscribe(conn, s);
  if (!conn.needsAuth || conn.connected) return connectDone(conn);
  const key =
    (typeof opts.pass === 'string' && opts.pass) || (typeof opts.auth_token === 'string' && opts.auth_token);
  if (!key) {
    conn.core.authFailed(conn, 'no access key');
    conn.fail(ERR.authViolation);
    return false;
  }
  const grant = conn.core.authenticate(key);
  if (grant instanceof Promise) {
    conn.parser.paused = true;
    conn.socket.pause();
    grant.then(
      (g) => authenticated(conn, g, true),
      () => authenticated(conn, null, true),
    );
    return false;
  }
  authenticated(conn, grant, false);
  return !conn.closed;
}

function authenticated(conn: Connection, grant: AccessGrant | null, resume: boolean): void {
  if (conn.closed) return;
  if (!grant) {
    conn.core.authFailed(conn, 'unknown or revoked access key');
    conn.fail(ERR.authViolation);
    return;
  }
  conn.grant = grant;
  connectDone(conn);
  if (!resume) return;
  conn.socket.resume();
  conn.parser.resume();
}

function connectDone(conn: Connection): boolean {
  conn.connected = true;
  conn.clearAuthTimer();
  if (conn.verbose) conn.writer.write(OK);
  return true;
}

/** CONNECT may switch echo off after SUBs were sent (rare): re-create those subscriptions. */
function resubscribe(conn: Connection, old: Subscription): void {
  const ctx = old.owner as SubContext;
  old.unsubscribe();
  const s = conn.core.hub.subscribe(old.pattern, {
    ...(old.queue === undefined ? {} : { queue: old.queue }),
    callback: conn.onMsg,
    owner: ctx,
    skipOrigin: conn,
  });
  conn.subs.set(ctx.sid, s);
}
