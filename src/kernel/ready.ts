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
