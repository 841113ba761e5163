/**
 * Log forwarding on the edge's seam: the edge's own log entries (the log store's) sent to a
 * syslog receiver (UDP, TCP, TLS) or an HTTP collector through a bounded disk queue, at
 * `/dm/v2/log-forwarding/*`, with a section of configuration templates.
 */
import type { EdgeModule } from '../modules.js';
import { DEFAULT_CONFIG } from './config.js';
import { LogForwardingConfigSection } from './config-section.js';
import { Forwarder } from './forwarder.js';
import { logForwardingMigrations } from './migrations/index.js';
import { logForwardingOptions } from './options.js';
import { LogForwardingRepository } from './repository.js';
import { logForwardingRoutes } from './routes.js';
import { LogForwardingService } from './service.js';

declare module '../modules.js' {
  interface EdgeModules {
    'log-forwarding': LogForwardingService;
  }
}

export const logForwardingModule: EdgeModule<'log-forwarding', typeof logForwardingOptions> = {
  name: 'log-forwarding',
  options: logForwardingOptions,
  migrations: logForwardingMigrations,
  requires: ['logs', 'trust'],
  async start(ctx) {
    const repo = new LogForwardingRepository(ctx.database.db);
    const trust = ctx.module('trust');
    const config = (await repo.config()) ?? DEFAULT_CONFIG;
    const forwarder = new Forwarder(
      ctx.module('logs'),
      repo,
      ctx.logger,
      {
        dataDir: ctx.config.dataDir,
        maxMessages: ctx.config.logForwardingQueueMessages,
        maxBytes: ctx.config.logForwardingQueueBytes,
        confirmMs: ctx.config.logForwardingConfirmMs,
        trustedCa: () => trust.ca(),
      },
      config,
      await repo.cursor(),
    );
    ctx.defer('log forwarding', () => forwarder.close());
    return new LogForwardingService(repo, forwarder);
  },
  mount: (ctx, forwarding) => ctx.app.register(logForwardingRoutes, { forwarding }),
  listening: (_ctx, forwarding) => forwarding.applied(forwarding.forwarder.config),
  configSection: (forwarding) => new LogForwardingConfigSection(forwarding),
  close: (forwarding) => forwarding.close(),
};
