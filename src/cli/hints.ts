/**
 * Errors a person can cause, said in one line that names the fix (no stack trace unless
 * `--debug` or MILLWRIGHT_DEBUG=1), and "did you mean" for a mistyped word. Light: no service code.
 */

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

/** The candidate closest to `word` (case-insensitive), when it is close enough to be a typo. */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const lc = c.toLowerCase();
    const d = lc.startsWith(w) || w.startsWith(lc) ? Math.abs(lc.length - w.length) * 0.5 : distance(w, lc);
    if (!best || d < best.d) best = { c, d };
  }
  return best && best.d <= Math.max(2, Math.floor(w.length / 3)) ? best.c : undefined;
}

/** Whether `--debug` (anywhere on the line) or MILLWRIGHT_DEBUG=1 asks for stack traces. */
export function debugWanted(argv: readonly string[] = process.argv): boolean {
  return argv.includes('--debug') || process.env.MILLWRIGHT_DEBUG === '1';
}

const TLS_ERRORS =
  /self[- ]signed certificate|unable to verify the first certificate|unable to get local issuer certificate|certificate has expired|Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME_INVALID|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN/i;

/**
 * The fix for a connection error's message, or undefined. `service` says which flags apply:
 * the edge's (`--ca`, MILLWRIGHT_EDGE_CA) or the UNS's (MILLWRIGHT_UNS_CA).
 */
export function connectionHint(message: string, service: 'edge' | 'uns'): string | undefined {
  const variable = service === 'uns' ? 'MILLWRIGHT_UNS_CA' : 'MILLWRIGHT_EDGE_CA';
  if (TLS_ERRORS.test(message)) {
    return `the ${service === 'uns' ? "UNS's" : "edge's"} certificate is not trusted: pass --ca <data-dir>/tls/server.crt (or set ${variable}), or --insecure for a test ${service === 'uns' ? 'broker' : 'edge'}`;
  }
  if (/ECONNREFUSED/.test(message)) {
    return service === 'uns'
      ? 'nothing listens there: is the UNS running (millwright up, millwright uns)? Give its address with --mqtt-url, or its data directory with --data-dir'
      : 'nothing listens there: is the edge running (millwright up, millwright edge)? Give its address with --url, or its data directory with --data-dir';
  }
  if (/ECONNRESET|socket hang up|wrong version number|EPROTO/.test(message)) {
    return `something else answers there (not a Millwright ${service === 'uns' ? 'UNS' : 'edge'}, or not HTTPS/TLS): check the address${service === 'uns' ? ' (--mqtt-url)' : ' (--url; http:// for an edge started with --http)'}`;
  }
  return undefined;
}

/** The service a command line talks to, for the hint's flags. */
export function serviceOf(argv: readonly string[]): 'edge' | 'uns' {
  return argv.slice(2).find((a) => !a.startsWith('-')) === 'uns' ? 'uns' : 'edge';
}
