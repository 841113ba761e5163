/** The DeviceHub on the edge's seam: the driver catalogue, devices and tags at `/devicehub/v2`. */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import type { Database } from '../../kernel/db/index.js';
import { mountGraphql } from '../../kernel/graphql.js';
import { acceptGraphqlUploads } from '../../kernel/graphql/upload.js';
import { LIST_SDL } from '../../kernel/paging.js';
import type { DataHub } from '../datahub/index.js';
import type { EdgeModule } from '../modules.js';
import { devicehubOptions } from './options.js';
import { BrowseService } from './browse.js';
import { DevicehubConfigSection } from './config-section.js';
import { DevicehubRepository } from './repository.js';
import { MAX_CSV_BYTES, resolvers, type DevicehubContext } from './resolvers.js';
import { DeviceHubService } from './service.js';
import type { DevicehubReadModel } from './types.js';
import { devicehubMigrations } from './migrations/index.js';

export const DEVICEHUB_PATH = '/devicehub/v2';
/**
 * Static cost ceiling of a `/devicehub/v2` query: a page of 1,000 registers with their
 * properties and topics costs about 60,000 by the kernel's measure.
 */
export const DEVICEHUB_MAX_COST = 200_000;

/** The schema (SDL) of `/devicehub/v2`, with the kernel's list input types. */
export function devicehubSchema(): string {
  // Beside this module in src/ and in dist/ (the build copies .graphql files).
  return readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8') + LIST_SDL;
}

export interface Devicehub {
  /** The domain rules behind `/devicehub/v2` (wire shapes). */
  service: DeviceHubService;
  /** Browse tasks and the cart. */
  browse: BrowseService;
  /** Devices and tags for other modules (domain shapes), change events, the tag status slot. */
  readModel: DevicehubReadModel;
  /** The DeviceHub's section of configuration templates (devices and tags). */
  configSection: DevicehubConfigSection;
}

/** The DeviceHub on `database` (migrated with `devicehubMigrations`). */
export function createDevicehub(database: Database): Devicehub {
  const repo = new DevicehubRepository(database);
  const service = new DeviceHubService(repo);
  return {
    service,
    browse: new BrowseService(service),
    readModel: service.readModel,
    configSection: new DevicehubConfigSection(repo, service),
  };
}

/** Mounts `/devicehub/v2` on `app` (in its own scope, so that multipart bodies are parsed only there). */
export async function mountDevicehub(
  app: FastifyInstance,
  hub: Devicehub,
  options: { csvMaxBytes?: number; hub?: DataHub } = {},
): Promise<void> {
  const csvMaxBytes = options.csvMaxBytes ?? MAX_CSV_BYTES;
  // TagValues is a subscription: @fastify/websocket once, on the server (not in the scope below),
  // so that the endpoints mounted after this one share it (kernel/graphql/mount.ts).
  if (!app.hasDecorator('websocketServer')) {
    await app.register(websocket, { options: { maxPayload: 1024 * 1024 } });
  }
  await app.register(async (scope) => {
    // One byte over the limit lets busboy tell a file of exactly the limit from a larger one.
    acceptGraphqlUploads(scope, { maxFileSize: csvMaxBytes + 1, maxFiles: 1 });
    await mountGraphql<DevicehubContext>(scope, {
      path: DEVICEHUB_PATH,
      schema: devicehubSchema(),
      resolvers,
      context: () => ({
        devicehub: hub.service,
        browse: hub.browse,
        csvMaxBytes,
        ...(options.hub ? { hub: options.hub } : {}),
      }),
      maxCost: DEVICEHUB_MAX_COST,
      subscriptions: true,
      // A page of registers written straight from the views (kernel/graphql/direct.ts).
      directQueries: ['ListRegistersFromAllDevices', 'ListRegisters'],
    });
  });
}

declare module '../modules.js' {
  interface EdgeModules {
    devicehub: Devicehub;
  }
}

export const devicehubModule: EdgeModule<'devicehub', typeof devicehubOptions> = {
  name: 'devicehub',
  options: devicehubOptions,
  requires: ['datahub'],
  migrations: devicehubMigrations,
  start: (ctx) => createDevicehub(ctx.database),
  mount: (ctx, devicehub) =>
    mountDevicehub(ctx.app, devicehub, {
      csvMaxBytes: ctx.config.devicehubCsvMaxBytes,
      hub: ctx.module('datahub').hub,
    }),
  configSection: (devicehub) => devicehub.configSection,
};
