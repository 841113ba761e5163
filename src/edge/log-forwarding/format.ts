/**
 * What goes on the wire: RFC 5424 syslog messages (framed by octet counting, RFC 6587 and RFC
 * 5425, over TCP and TLS; one per datagram over UDP, RFC 5426) and JSON lines for HTTP. Every
 * message carries the queue's sequence number (`[meta sequenceId="n"]`, RFC 5424 section 7.3.1;
 * `sequenceId` in a JSON line), so a receiver can drop the copies a reconnect resends.
 */
import { hostname as osHostname } from 'node:os';
import { formatLogTime, type LogLevelName } from '../../kernel/logging/log-store.js';
import { FACILITIES, type SyslogTarget } from './config.js';

/** One queued log entry (the queue's payload, JSON). */
export interface QueuedEntry {
  /** µs since the epoch, as the log store keeps it. */
  timestamp: number;
  level: LogLevelName;
  component: string;
  message: string;
  fields: Record<string, unknown>;
}

/** RFC 5424 severities of the log levels. */
const SEVERITY: Record<LogLevelName, number> = { trace: 7, debug: 7, info: 6, warn: 4, error: 3, fatal: 2 };

/** Printable US-ASCII without spaces, at most `max` characters; `-` (the NILVALUE) when empty. */
function header(text: string, max: number): string {
  const clean = text.replace(/[^!-~]/g, '_').slice(0, max);
  return clean === '' ? '-' : clean;
}

/** The text of an entry: its message, then its fields as JSON when it has any. */
function text(entry: QueuedEntry): string {
  const fields = Object.keys(entry.fields).length > 0 ? ` ${JSON.stringify(entry.fields)}` : '';
  return `${entry.message}${fields}`.replace(/\r?\n/g, ' ');
}

/** Cuts `s` to at most `bytes` UTF-8 bytes without splitting a character. */
function cut(s: string, bytes: number): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= bytes) return s;
  let end = Math.max(0, bytes);
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** One RFC 5424 message (without framing), at most `maxMessageBytes` bytes. */
export function syslogMessage(entry: QueuedEntry, seq: number, target: SyslogTarget): string {
  const facility = FACILITIES.indexOf((target.facility ?? 'local0') as (typeof FACILITIES)[number]);
  const pri = facility * 8 + SEVERITY[entry.level];
  const head = [
    `<${pri}>1`,
    formatLogTime(entry.timestamp),
    header(target.hostname ?? osHostname(), 255),
    header(target.appName ?? 'millwright', 48),
    String(process.pid),
    header(entry.component, 32),
    `[meta sequenceId="${(seq % 2147483647) + 1}"]`,
  ].join(' ');
  const max = target.maxMessageBytes ?? 8192;
  return `${head} ${cut(text(entry), max - Buffer.byteLength(head) - 1)}`;
}

/** An octet-counted frame: `LEN SP MSG` (RFC 6587 section 3.4.1, RFC 5425 section 4.3). */
export function octetCounted(message: string): Buffer {
  const body = Buffer.from(message, 'utf8');
  return Buffer.concat([Buffer.from(`${body.length} `), body]);
}

/** One JSON line of the HTTP target: the entry as `/logs/query` shows it, and where it came from. */
export function jsonLine(entry: QueuedEntry, seq: number, host: string): string {
  return JSON.stringify({
    timestamp: formatLogTime(entry.timestamp),
    level: entry.level,
    component: entry.component,
    message: entry.message,
    fields: entry.fields,
    hostname: host,
    sequenceId: seq,
  });
}
