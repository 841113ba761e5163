/**
 * Authentication primitives shared by the services: password hashing, secret hashing, random
 * credentials and signed tokens (JWT, HS256). No service-specific policy lives here.
 */
import { createHash, createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (
  pw: string,
  salt: Buffer,
  len: number,
  opts: object,
) => Promise<Buffer>;

// scrypt with N=2^15, r=8, p=1: ~50-100 ms per hash on one core, 32 MiB of memory.
const SCRYPT = { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/**
 * A slow salted hash for secrets people choose (passwords). Format:
 * `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`.
 */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(expected, actual);
}

/**
 * A fast hash for machine-generated secrets (client secrets, API tokens). These carry 256 bits of
 * randomness, so a slow hash adds nothing against guessing; SHA-256 keeps verification cheap.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret));
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A random credential: `<prefix>_<43 base64url chars>` (256 bits). */
export function randomSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** A readable random password for first-run credentials (20 chars, ~119 bits). */
export function randomPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  const bytes = randomBytes(20);
  let out = '';
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

export interface JwtClaims {
  sub: string;
  iat: number;
  exp: number;
  [claim: string]: unknown;
}

/** Unpadded base64url, the only alphabet of a token's parts. */
const BASE64URL = /^[A-Za-z0-9_-]+$/;

const JWT_HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

/** Signs and verifies HS256 JSON Web Tokens with one key. */
export class TokenSigner {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length < 32) throw new Error('token signing key must be at least 32 bytes');
    this.#key = key;
  }

  sign(claims: Omit<JwtClaims, 'iat' | 'exp'>, ttlSeconds: number, now = Date.now()): string {
    const iat = Math.floor(now / 1000);
    const payload = Buffer.from(JSON.stringify({ ...claims, iat, exp: iat + ttlSeconds })).toString(
      'base64url',
    );
    const body = `${JWT_HEADER}.${payload}`;
    return `${body}.${createHmac('sha256', this.#key).update(body).digest('base64url')}`;
  }

  /**
   * The claims of a valid, unexpired token; `null` for anything else. Exactly one encoding of a
   * token is accepted, the one `sign` makes: unpadded base64url in every part (RFC 7515 2), so
   * that a token with `=` appended, or another spelling of the same bytes, is refused.
   */
  verify(token: string, now = Date.now()): JwtClaims | null {
    const dot2 = token.lastIndexOf('.');
    const dot1 = token.indexOf('.');
    if (dot1 <= 0 || dot2 <= dot1) return null;
    if (token.slice(0, dot1) !== JWT_HEADER) return null;
    const body = token.slice(0, dot2);
    const payload = token.slice(dot1 + 1, dot2);
    if (!BASE64URL.test(payload)) return null;
    const expected = Buffer.from(createHmac('sha256', this.#key).update(body).digest('base64url'));
    const given = Buffer.from(token.slice(dot2 + 1));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const decoded = Buffer.from(payload, 'base64url');
    if (decoded.toString('base64url') !== payload) return null; // a non-canonical spelling
    let claims: JwtClaims;
    try {
      claims = JSON.parse(decoded.toString('utf8')) as JwtClaims;
    } catch {
      return null;
    }
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return null;
    return claims;
  }
}
