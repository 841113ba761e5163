/**
 * The services' logger: pino, writing JSON lines to stdout (or another destination) and the same
 * entries to the embedded log store, with secrets redacted before either sink sees them.
 *
 * Every entry names its `component`: the logger's own (`edge`) unless a child binds another
 * (`logger.child({ component: 'edge.auth' })`); the line carries it once either way. The logger
 * is a plain pino logger, so Fastify takes it as its `loggerInstance`.
 */
import pino, { type DestinationStream, type Level, type Logger } from 'pino';
import type { LogStore, NewLogEntry } from './log-store.js';

export type { Logger };

/** Secret-bearing keys, redacted at the top level and one or two objects down. */
const SECRET_KEYS = [
  'password',
  'newPassword',
  'currentPassword',
  'client_secret',
  'secret',
  'token',
  'access_token',
  'refresh_token',
  'jwtAccess',
];

/** pino `redact` paths of every Millwright logger. */
export const REDACT_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
];

export const REDACTED = '[redacted]';

export interface CreateLoggerOptions {
  /** Lowest level written: trace, debug, info, warn, error, fatal or silent. */
  level: Level | 'silent';
  /** The component of entries not bound to another: the service name (`edge`). */
  component: string;
  /** Where entries are also kept; none: the destination only. */
  store?: Pick<LogStore, 'append'> | undefined;
  /** Where JSON lines go (default stdout). */
  destination?: DestinationStream | undefined;
}

const hasComponent = Symbol('millwright.hasComponent');

/** Keys of a pino line that are not `fields` of a stored entry. */
const OWN_KEYS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'component']);

export function createLogger(options: CreateLoggerOptions): Logger {
  const destination = options.destination ?? pino.destination(1);
  const store = options.store;
  const stream: DestinationStream = store
    ? pino.multistream(
        [
          // Each sink takes every level; the logger's level is the only filter.
          { level: 'trace', stream: destination },
          { level: 'trace', stream: { write: (line: string) => storeLine(store, line, options.component) } },
        ],
        { dedupe: false },
      )
    : destination;
  const root = options.component;
  return pino(
    {
      level: options.level,
      redact: { paths: [...REDACT_PATHS], censor: REDACTED },
      // The component goes in once: the root's unless a child bound its own.
      mixin: (_obj, _level, logger) =>
        (logger as unknown as Record<symbol, boolean>)[hasComponent] ? {} : { component: root },
      onChild: (child) => {
        const flags = child as unknown as Record<symbol, boolean>;
        // Inherited from the parent when it already bound one; otherwise read the new bindings once.
        if (!flags[hasComponent] && Object.hasOwn(child.bindings(), 'component')) flags[hasComponent] = true;
      },
    },
    stream,
  );
}

/** Turns one pino JSON line into a stored entry; a line that is not one is kept as its text. */
function storeLine(store: Pick<LogStore, 'append'>, line: string, fallbackComponent: string): void {
  let obj: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('not an object');
    obj = parsed as Record<string, unknown>;
  } catch {
    store.append({ level: 'info', message: line.trimEnd(), component: fallbackComponent });
    return;
  }
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) if (!OWN_KEYS.has(key)) fields[key] = obj[key];
  const entry: NewLogEntry = {
    level: typeof obj.level === 'number' ? obj.level : 30,
    message: typeof obj.msg === 'string' ? obj.msg : obj.msg === undefined ? '' : JSON.stringify(obj.msg),
    component: typeof obj.component === 'string' && obj.component !== '' ? obj.component : fallbackComponent,
    fields,
  };
  if (typeof obj.time === 'number') entry.time = obj.time;
  store.append(entry);
}
