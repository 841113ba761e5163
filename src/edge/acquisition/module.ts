/**
 * Acquisition on the edge's seam: the engine that polls the DeviceHub's devices onto the DataHub,
 * the drivers' browsers, and `/devicehub/metrics`. Polling starts once the edge listens.
 */
import { join } from 'node:path';
import type { EdgeModule } from '../modules.js';
import { acquisitionOptions } from './options.js';
import { ACQUISITION_DRIVERS } from './drivers/index.js';
import { AcquisitionEngine } from './engine.js';
import { acquisitionRoutes } from './routes.js';

declare module '../modules.js' {
  interface EdgeModules {
    acquisition: AcquisitionEngine;
  }
}

export const acquisitionModule: EdgeModule<'acquisition', typeof acquisitionOptions> = {
  name: 'acquisition',
  options: acquisitionOptions,
  requires: ['datahub', 'devicehub', 'dm', 'trust'],
  start(ctx) {
    const datahub = ctx.module('datahub');
    const devicehub = ctx.module('devicehub');
    const trust = ctx.module('trust');
    const engine = new AcquisitionEngine({
      hub: datahub.hub,
      devicehub: devicehub.readModel,
      drivers: ACQUISITION_DRIVERS,
      dataDir: join(ctx.dataDir, 'acquisition'),
      logger: ctx.logger,
      backoffMaxMs: ctx.config.acquisitionBackoffMax,
      // Joined to a NATS cluster: the cluster's subscribers are not seen here, publish everything.
      publishValue: datahub.external ? 'always' : 'on-interest',
      // The OPC UA client's PKI trusts them for devices whose `trustServerCertificate` is `ca`.
      trustedCertificates: () => trust.pems(),
    });
    // A device refused for its server's certificate tries again as soon as the trust store changes.
    const off = trust.onChange(() => engine.retryFailed((d) => d.props.trustServerCertificate === 'ca'));
    ctx.defer('acquisition: trust store listener', off);
    for (const d of ACQUISITION_DRIVERS) {
      const browse = d.browse;
      if (browse) devicehub.browse.registerBrowser(d.key, (device, driver) => browse(device, driver, engine));
    }
    // High availability: a paired edge polls only while it holds the lease as active (dm/ha.ts).
    const ha = ctx.module('dm').ha;
    engine.hold(!ha.polling);
    ha.onChange((polling) => void engine.hold(!polling));
    return engine;
  },
  mount: (ctx, engine) => ctx.app.register(acquisitionRoutes, { engine: () => engine }),
  listening: (_ctx, engine) => engine.start(),
  close: (engine) => engine.stop(),
};
