/**
 * Digital twins on the edge's seam: `/digital-twins`, publishing on the DataHub, and the `twins`
 * section of configuration templates.
 */
import type { EdgeModule } from '../modules.js';
import { twinsOptions } from './options.js';
import { twinsConfigSection } from './config-section.js';
import { createTwins, mountTwins, twinsMigrations, UnsLink, type TwinsApi } from './index.js';

declare module '../modules.js' {
  interface EdgeModules {
    twins: TwinsApi;
  }
}

export const twinsModule: EdgeModule<'twins', typeof twinsOptions> = {
  name: 'twins',
  options: twinsOptions,
  migrations: twinsMigrations,
  requires: ['datahub'],
  start: (ctx) => {
    const c = ctx.config;
    const uns = c.unsMqttUrl
      ? new UnsLink({
          url: c.unsMqttUrl,
          username: c.unsUsername,
          password: c.unsPassword,
          logger: ctx.logger,
        })
      : null;
    return createTwins({
      database: ctx.database,
      hub: ctx.module('datahub').hub,
      logger: ctx.logger,
      uns,
      maxPayloadBytes: ctx.module('datahub').maxPayload,
    });
  },
  mount: (ctx, twins) => mountTwins(ctx.app, twins),
  configSection: (twins) => twinsConfigSection(twins.service),
  close: (twins) => twins.close(),
};
