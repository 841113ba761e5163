/**
 * The self-signed TLS certificate a service makes on its first start: an EC P-256 key from
 * node:crypto and an X.509 v3 certificate written here in DER (a few fixed structures), signed with
 * ECDSA-SHA256. It replaces the `selfsigned` package, whose import (with @peculiar/x509, asn1js,
 * pkijs, tsyringe under it) cost about a quarter of a second of CPU on every new data directory,
 * several times what the key and the signature cost.
 *
 * The certificate holds what `selfsigned` was asked for: subject and issuer `CN=<host>`, a random
 * positive serial, the validity given, basic constraints `CA:FALSE`, key usage digitalSignature and
 * keyEncipherment, extended key usage serverAuth, and the subject alternative names given (DNS
 * names and IP addresses). test/kernel/self-signed.test.ts reads it back with node:crypto's
 * X509Certificate and openssl and serves TLS with it.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export interface SelfSignedRequest {
  commonName: string;
  notBefore: Date;
  notAfter: Date;
  dnsNames: string[];
  ipAddresses: string[];
}

export interface SelfSignedPems {
  /** The certificate, PEM. */
  cert: string;
  /** The private key, PKCS #8 PEM. */
  private: string;
}

// Object identifiers, DER-encoded once.
const OID = {
  ecdsaWithSha256: oid('1.2.840.10045.4.3.2'),
  commonName: oid('2.5.4.3'),
  basicConstraints: oid('2.5.29.19'),
  keyUsage: oid('2.5.29.15'),
  extKeyUsage: oid('2.5.29.37'),
  subjectAltName: oid('2.5.29.17'),
  serverAuth: oid('1.3.6.1.5.5.7.3.1'),
};

/** A new EC P-256 key and a self-signed certificate for it. */
export function selfSignedCertificate(req: SelfSignedRequest): SelfSignedPems {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const algorithm = seq(OID.ecdsaWithSha256);
  const name = seq(set(seq(OID.commonName, tlv(0x0c, Buffer.from(req.commonName, 'utf8')))));
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x3f) | 0x40; // positive, and no leading zero byte to drop
  const altNames = [
    ...req.dnsNames.map((n) => tlv(0x82, Buffer.from(n, 'ascii'))),
    ...req.ipAddresses.map((ip) => tlv(0x87, ipBytes(ip))),
  ];
  const extensions = [
    extension(OID.basicConstraints, seq()),
    // digitalSignature (bit 0) and keyEncipherment (bit 2): one byte, its 5 low bits unused.
    extension(OID.keyUsage, tlv(0x03, Buffer.from([5, 0xa0]))),
    extension(OID.extKeyUsage, seq(OID.serverAuth)),
    extension(OID.subjectAltName, seq(...altNames)),
  ];
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // version 3
    integer(serial),
    algorithm,
    name, // issuer: itself
    seq(time(req.notBefore), time(req.notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, privateKey); // DER ECDSA-Sig-Value
  const der = seq(tbs, algorithm, bitString(signature));
  const body = der.toString('base64').replace(/.{64}/g, '$&\n');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${body}${body.endsWith('\n') ? '' : '\n'}-----END CERTIFICATE-----\n`,
    private: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let head: number[];
  if (n < 0x80) head = [tag, n];
  else {
    const len: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) len.unshift(v & 0xff);
    head = [tag, 0x80 | len.length, ...len];
  }
  return Buffer.concat([Buffer.from(head), content]);
}

function seq(...parts: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(parts));
}

function set(...parts: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(parts));
}

/** A non-negative INTEGER from its big-endian bytes (minimal: no leading zero unless needed). */
function integer(bytes: Buffer): Buffer {
  return tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function bitString(bytes: Buffer): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const v of rest) {
    const groups = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) groups.unshift(0x80 | (x & 0x7f));
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

/** An extension (not critical) whose value is `value`'s DER. */
function extension(id: Buffer, value: Buffer): Buffer {
  return seq(id, tlv(0x04, value));
}

/** UTCTime up to 2049, GeneralizedTime from 2050 (RFC 5280, 4.1.2.5), seconds, UTC. */
function time(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : tlv(0x18, Buffer.from(digits, 'ascii'));
}

/** The 4 or 16 bytes of an IP address. */
function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip) || ip.includes('.')) throw new Error(`not an IP address this encoder takes: ${ip}`);
  const [head = '', tail = ''] = ip.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const h = groups(head);
  const t = ip.includes('::') ? groups(tail) : [];
  const all = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}
