/**
 * The analytics log: entries of component `analytics` in the edge's log store (what `/logs/query`
 * answers with `component=analytics`), also handed to live listeners (`SubscribeToAnalyticsLogs`).
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';

export interface AnalyticsLogEntry {
  Timestamp: string;
  Level: string;
  Message: string;
  Fields: Record<string, unknown>;
}

export const ANALYTICS_COMPONENT = 'analytics';

export class AnalyticsLog {
  readonly #logger: Logger;
  readonly events = new EventEmitter();

  constructor(logger: Logger) {
    this.#logger = logger.child({ component: ANALYTICS_COMPONENT });
    this.events.setMaxListeners(0);
  }

  write(
    level: 'debug' | 'info' | 'warn' | 'error',
    message: string,
    fields: Record<string, unknown> = {},
  ): void {
    this.#logger[level](fields, message);
    const entry: AnalyticsLogEntry = {
      Timestamp: new Date().toISOString(),
      Level: level,
      Message: message,
      Fields: fields,
    };
    this.events.emit('entry', entry);
  }
}
