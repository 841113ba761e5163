/**
 * Human-readable log lines for a terminal (`--log-format pretty`, the default on a TTY): time,
 * level, component, message and the other fields as key=value, one line each. The JSON lines for
 * services and log collectors stay the default elsewhere (`--log-format json`).
 */
import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};
const COLOURS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
const OWN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'component']);

/** Formats one pino JSON line; a line that is not JSON is answered as it is. */
export function prettyLine(line: string, colour = false): string {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const level = typeof obj.level === 'number' ? obj.level : 30;
  const time = new Date(typeof obj.time === 'number' ? obj.time : Date.now()).toISOString().slice(11, 23);
  let name = LEVELS[level] ?? String(level);
  if (colour) name = `\x1b[${COLOURS[level] ?? '0'}m${name}\x1b[0m`;
  const fields: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (OWN.has(k) || v === undefined) continue;
    if (k === 'err' && v && typeof v === 'object') {
      const e = v as { message?: string; stack?: string };
      fields.push(`err=${JSON.stringify(e.message ?? '')}`);
      if (e.stack) fields.push(`\n${e.stack}`);
      continue;
    }
    fields.push(`${k}=${typeof v === 'string' && !/[\s"=]/.test(v) ? v : JSON.stringify(v)}`);
  }
  const component = typeof obj.component === 'string' ? ` ${obj.component}` : '';
  const msg = typeof obj.msg === 'string' ? obj.msg : '';
  return `${time} ${name}${component}: ${msg}${fields.length ? ` ${fields.join(' ')}` : ''}\n`;
}

/** A pino destination writing pretty lines to `out` (stdout by default). */
export function prettyDestination(
  out: { write(s: string): unknown } = process.stdout,
  colour = Boolean((out as { isTTY?: boolean }).isTTY),
): DestinationStream {
  return { write: (line: string) => void out.write(prettyLine(line, colour)) };
}

/** A pino destination that drops every line (`--log-format none`: the log store keeps them). */
export const discardDestination: DestinationStream = { write: () => undefined };

/** `auto`: pretty on a terminal, JSON lines otherwise; `none`: nothing on standard output. */
export function resolveLogFormat(
  format: string | undefined,
  isTTY = Boolean(process.stdout.isTTY),
): 'pretty' | 'json' | 'none' {
  if (format === 'pretty' || format === 'json' || format === 'none') return format;
  return isTTY ? 'pretty' : 'json';
}
