/**
 * TLS connections pinned to one certificate (its SHA-256 fingerprint), the way an edge trusts its
 * manager after `PUT /dm/cloud/url/{tx}/confirm`: the chain is not checked against public CAs
 * (the manager's certificate is usually self-signed), but the peer's certificate must be the one
 * confirmed. The check runs before anything is written on the connection, so no credential
 * reaches a server with another certificate.
 */
import { isIP } from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';

/** `AB:CD:...`, the form `getPeerCertificate().fingerprint256` answers. */
export type Fingerprint = string;

export class CertificateChangedError extends Error {
  readonly code = 'CERTIFICATE_CHANGED';
  constructor(
    readonly expected: Fingerprint,
    readonly actual: Fingerprint,
  ) {
    super(
      `the manager's certificate changed since it was confirmed (confirmed ${expected}, now ${actual}); ` +
        'set the manager address and confirm its certificate again',
    );
    this.name = 'CertificateChangedError';
  }
}

/** The fingerprint of the certificate a TLS server presents. */
export function fetchFingerprint(url: string, timeoutMs = 10_000): Promise<Fingerprint> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: u.hostname.replace(/^\[|\]$/g, ''),
      port: Number(u.port || 443),
      rejectUnauthorized: false,
      ...(isIP(u.hostname) ? {} : { servername: u.hostname }),
    });
    const timer = setTimeout(
      () => socket.destroy(new Error(`no TLS answer from ${u.host} in time`)),
      timeoutMs,
    );
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      const fp = socket.getPeerCertificate().fingerprint256;
      socket.end();
      if (fp) resolve(fp);
      else reject(new Error(`${u.host} presented no certificate`));
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * A `createConnection` for `https.request` and `ws` that hands over the socket only once the
 * peer's certificate matched `fingerprint`.
 */
export function pinnedConnection(fingerprint: Fingerprint) {
  return (
    options: tls.ConnectionOptions & { host?: string; servername?: string },
    cb: (err: Error | null, socket?: Duplex) => void,
  ) => {
    const host = (options.host ?? 'localhost').replace(/^\[|\]$/g, '');
    const socket = tls.connect({
      ...options,
      host,
      rejectUnauthorized: false,
      ...(isIP(host) ? { servername: undefined } : { servername: options.servername ?? host }),
    });
    // Small control frames go out at once (no Nagle delay waiting for the peer's delayed ACK).
    socket.setNoDelay(true);
    const onError = (err: Error) => cb(err);
    socket.once('error', onError);
    socket.once('secureConnect', () => {
      socket.off('error', onError);
      const actual = socket.getPeerCertificate().fingerprint256 ?? '';
      if (actual !== fingerprint) {
        const err = new CertificateChangedError(fingerprint, actual);
        socket.destroy();
        cb(err);
        return;
      }
      cb(null, socket);
    });
    return undefined;
  };
}
