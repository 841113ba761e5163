/**
 * The OPC UA server's client certificates as files in its PKI folders (trusted/certs and
 * rejected): listed by the main thread (the API) and by the server's worker (before a move).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { UaFolders } from './ua-protocol.js';
import type { CertificateGroup, CertificateInfo } from './types.js';

export function certificateFolder(folders: UaFolders, group: CertificateGroup): string {
  return group === 'Trusted' ? folders.trusted : folders.rejected;
}

/** Client certificates of a group (every group when none is named). */
export function listCertificates(
  folders: UaFolders,
  group?: CertificateGroup | null,
  warn?: (data: Record<string, unknown>, msg: string) => void,
): CertificateInfo[] {
  const groups: CertificateGroup[] = group ? [group] : ['Trusted', 'Rejected'];
  const out: CertificateInfo[] = [];
  for (const g of groups) {
    const folder = certificateFolder(folders, g);
    let files: string[] = [];
    try {
      files = readdirSync(folder).filter((f) => /\.(der|pem|crt|cer)$/i.test(f));
    } catch {
      files = [];
    }
    for (const fileName of files) {
      try {
        const x = new X509Certificate(readFileSync(join(folder, fileName)));
        const uri = /URI:([^,\s]+)/.exec(x.subjectAltName ?? '')?.[1] ?? null;
        out.push({
          thumbprint: createHash('sha1').update(x.raw).digest('hex'),
          group: g,
          fileName,
          subject: x.subject.replace(/\n/g, ', '),
          applicationUri: uri,
          notBefore: new Date(x.validFrom).toISOString(),
          notAfter: new Date(x.validTo).toISOString(),
        });
      } catch (err) {
        warn?.({ err: String(err), fileName }, 'opcua certificate file not readable');
      }
    }
  }
  return out;
}

/** The server's own certificate (PEM), made on its first start. */
export function ownCertificatePem(folders: UaFolders): string | null {
  try {
    return readFileSync(join(folders.own, 'certificate.pem'), 'utf8');
  } catch {
    return null;
  }
}
