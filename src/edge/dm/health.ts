/**
 * Facts of the edge's host for the manager's alert rules, sent with each heartbeat: the disk use
 * of the data directory (`diskPercent`) and the expiry of the edge's HTTPS certificate
 * (`certNotAfter`, ISO 8601).
 */
import { X509Certificate } from 'node:crypto';
import { statfsSync } from 'node:fs';

export function hostHealth(dataDir: string, certPem: string | null): () => Record<string, unknown> {
  let certNotAfter: string | null = null;
  try {
    if (certPem) certNotAfter = new Date(new X509Certificate(certPem).validTo).toISOString();
  } catch {
    certNotAfter = null;
  }
  return () => {
    const out: Record<string, unknown> = {};
    if (certNotAfter) out.certNotAfter = certNotAfter;
    try {
      const s = statfsSync(dataDir);
      if (s.blocks > 0) out.diskPercent = Math.round((1 - s.bavail / s.blocks) * 1000) / 10;
    } catch {
      // no disk figure this time
    }
    return out;
  };
}
