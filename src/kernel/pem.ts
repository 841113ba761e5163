/**
 * PEM certificate chains: split into certificates, each read with node:crypto's X509Certificate
 * (subject, issuer, validity, SHA-256 fingerprint). Used by the manager's CA certificates and the
 * edge's trust store; a text that holds no certificate, or one that does not parse, is a 400.
 */
import { X509Certificate } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { badRequest } from './errors.js';

/** Largest PEM text taken in one upload or one sync (bytes). */
export const PEM_MAX_BYTES = 1024 * 1024;
/** Most certificates in one PEM text. */
export const PEM_MAX_CERTIFICATES = 100;

export interface CertificateInfo {
  /** The certificate alone, re-encoded as PEM. */
  pem: string;
  subject: string;
  issuer: string;
  validFrom: string;
  validTo: string;
  /** SHA-256 of the DER, upper-case hex with colons (as openssl prints it). */
  fingerprint: string;
  serialNumber: string;
  /** A CA certificate (basic constraints CA:TRUE). */
  ca: boolean;
  selfSigned: boolean;
  expired: boolean;
}

const BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Every certificate of a PEM text (a chain, or several CAs), in order; a 400 naming what is wrong. */
export function parsePemChain(text: string, field = 'pem'): CertificateInfo[] {
  if (typeof text !== 'string' || text.trim() === '') throw badRequest(`${field}: no PEM text`);
  if (Buffer.byteLength(text) > PEM_MAX_BYTES)
    throw badRequest(`${field}: larger than ${PEM_MAX_BYTES} bytes`);
  const blocks = text.match(BLOCK) ?? [];
  if (blocks.length === 0)
    throw badRequest(
      `${field}: no "-----BEGIN CERTIFICATE-----" block (a PEM certificate chain is expected)`,
    );
  if (blocks.length > PEM_MAX_CERTIFICATES)
    throw badRequest(`${field}: more than ${PEM_MAX_CERTIFICATES} certificates`);
  const now = Date.now();
  return blocks.map((block, i) => {
    let x: X509Certificate;
    try {
      x = new X509Certificate(block);
    } catch (err) {
      throw badRequest(
        `${field}: certificate ${i + 1} is not a valid X.509 certificate (${(err as Error).message})`,
      );
    }
    return {
      pem: x.toString(),
      subject: oneLine(x.subject),
      issuer: oneLine(x.issuer),
      validFrom: new Date(x.validFrom).toISOString(),
      validTo: new Date(x.validTo).toISOString(),
      fingerprint: x.fingerprint256,
      serialNumber: x.serialNumber,
      ca: x.ca,
      selfSigned: x.checkIssued(x),
      expired: Date.parse(x.validTo) < now,
    };
  });
}

/** `CN=x\nO=y` as `CN=x, O=y`. */
function oneLine(name: string): string {
  return name.split('\n').filter(Boolean).join(', ');
}

/**
 * The trust of an outbound TLS client that trusts `extra` beside the system's roots: Node's
 * bundled roots and `extra` (undefined when there is nothing extra: the default roots then apply).
 */
export function withRoots(extra: readonly string[]): string[] | undefined {
  return extra.length === 0 ? undefined : [...rootCertificates, ...extra];
}
