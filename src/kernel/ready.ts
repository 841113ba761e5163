import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The one machine-readable line a `millwright` process prints on stdout once every service it
 * runs is ready: `millwright-ready {json}`. Tests, benchmarks and scripts read it instead of
 * scraping the human banner. The JSON is a `ReadyLine`; fields may be added, never renamed.
 */

export const READY_PREFIX = 'millwright-ready ';

/** One service's addresses. Absent fields: that listener is off. */
export interface ReadyService {
  /** Base address of the HTTP(S) API, e.g. `https://localhost:8443`. */
  url: string;
  dataDir: string;
  /** Edge: the DataHub's NATS address (`nats://localhost:4222`). */
  natsUrl?: string;
  /** Edge: the web console (`https://localhost:8443/`), unless `--console=false`. */
  consoleUrl?: string;
  /** Edge: the OPC UA server (`opc.tcp://...:4840`), when it runs. */
  opcuaUrl?: string;
  /** UNS: MQTT over TCP, TLS and WebSocket. */
  mqttUrl?: string;
  mqttsUrl?: string;
  wsUrl?: string;
  /** Manager: the admin console API. */
  adminUrl?: string;
  /** Every port the service listens on, by option name (`port`, `datahub-port`, `mqtt-port`...). */
  ports: Record<string, number>;
  /** The first-run administrator, when this start created it (the password shown once). */
  firstRun?: { username: string; password?: string };
}

export interface ReadyLine {
  version: string;
  pid: number;
  services: Partial<Record<'edge' | 'uns' | 'manager', ReadyService>>;
}

export function formatReadyLine(line: ReadyLine): string {
  return `${READY_PREFIX}${JSON.stringify(line)}`;
}

/** The ready line in one line of output, or null when the line is something else. */
export function parseReadyLine(text: string): ReadyLine | null {
  const line = text.trim();
  if (!line.startsWith(READY_PREFIX)) return null;
  try {
    const parsed = JSON.parse(line.slice(READY_PREFIX.length)) as ReadyLine;
    return typeof parsed === 'object' && parsed && typeof parsed.services === 'object' ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * The ready record: the ready line, without first-run passwords, kept in each data directory of
 * the process as `ready.json` while it runs. The CLI reads it to find what `up` (or `edge`, `uns`)
 * started, wherever a taken default port moved it: `edge watch` finds the DataHub, `uns watch` the
 * broker, `edge device list` the edge and its certificate.
 */
export const READY_RECORD = 'ready.json';

function withoutPasswords(line: ReadyLine): ReadyLine {
  const services: ReadyLine['services'] = {};
  for (const [name, s] of Object.entries(line.services) as [keyof ReadyLine['services'], ReadyService][]) {
    const { firstRun, ...rest } = s;
    services[name] = firstRun ? { ...rest, firstRun: { username: firstRun.username } } : rest;
  }
  return { ...line, services };
}

/** Writes the record into every data directory of the line; answers the files written. */
export function writeReadyRecords(line: ReadyLine): string[] {
  const text = `${JSON.stringify(withoutPasswords(line), null, 2)}\n`;
  const written: string[] = [];
  for (const s of Object.values(line.services)) {
    if (!s) continue;
    const file = join(s.dataDir, READY_RECORD);
    try {
      writeFileSync(`${file}.tmp`, text, { mode: 0o644 });
      renameSync(`${file}.tmp`, file);
      written.push(file);
    } catch {
      // A data directory that cannot be written to was refused earlier; nothing to find then.
    }
  }
  return written;
}

/** Removes the records this process wrote (only while they are still its own). */
export function removeReadyRecords(files: readonly string[]): void {
  for (const file of files) {
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as ReadyLine).pid === process.pid)
        rmSync(file, { force: true });
    } catch {
      /* gone already */
    }
  }
}

/** The record of the process running on `dataDir`, or null (none, or its process has ended). */
export function readReadyRecord(dataDir: string): ReadyLine | null {
  let line: ReadyLine;
  try {
    line = JSON.parse(readFileSync(join(dataDir, READY_RECORD), 'utf8')) as ReadyLine;
  } catch {
    return null;
  }
  if (typeof line?.pid !== 'number' || typeof line.services !== 'object' || !line.services) return null;
  try {
    process.kill(line.pid, 0);
  } catch (err) {
    // EPERM: it runs, as another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  return line;
}
