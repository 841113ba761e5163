/**
 * Where the CLI's client commands find the running services: an explicit flag (`--url`,
 * `--nats-url`, `--mqtt-url`) or its variable wins; otherwise the ready record (`ready.json`,
 * src/kernel/ready.ts) of the service's data directory (`--data-dir`, MILLWRIGHT_EDGE_DATA_DIR /
 * MILLWRIGHT_UNS_DATA_DIR, default ~/.millwright/edge and ~/.millwright/uns, where `up` keeps
 * them) gives the addresses the running process really listens on, and the certificate of its
 * data directory is trusted; with neither, the documented defaults. Light: no service code.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { readReadyRecord, type ReadyLine, type ReadyService } from '../kernel/ready.js';

export interface Discovered {
  /** The record's service, when a running process wrote one. */
  service: ReadyService | null;
  /** The data directory looked at. */
  dataDir: string;
  /** `<dataDir>/tls/server.crt` when the service's address came from the record and it exists. */
  ca: string | undefined;
}

/** The data directory of `service` as the CLI looks for it: flag, variable, `~/.millwright/<service>`. */
export function dataDirOf(service: 'edge' | 'uns', flag: string | undefined): string {
  const variable = process.env[`MILLWRIGHT_${service.toUpperCase()}_DATA_DIR`];
  return resolve(flag ?? (variable || join(homedir(), '.millwright', service)));
}

/**
 * The running `service` of a data directory. `up --data-dir X` keeps the UNS in X/uns, `up`'s
 * record in X names both: the edge's directory is looked at for the UNS too.
 */
export function discover(service: 'edge' | 'uns', dataDirFlag: string | undefined): Discovered {
  const dataDir = dataDirOf(service, dataDirFlag);
  const candidates: string[] = [dataDir];
  if (service === 'uns')
    candidates.push(dataDirOf('edge', undefined), join(dataDirOf('edge', undefined), 'uns'));
  for (const dir of candidates) {
    const line: ReadyLine | null = readReadyRecord(dir);
    const found = line?.services[service];
    if (!found) continue;
    const crt = join(found.dataDir, 'tls', 'server.crt');
    return { service: found, dataDir: found.dataDir, ca: existsSync(crt) ? crt : undefined };
  }
  return { service: null, dataDir, ca: undefined };
}
