/**
 * Cloud storage (`/cloudstorage`): the edge's files synced to S3-compatible object storage, with
 * resumable multipart uploads (resumed at start after a stop or a crash) and sealed secrets.
 */
import { SecretBox } from '../../kernel/secret-box.js';
import type { EdgeModule } from '../modules.js';
import { cloudstorageMigrations } from './migrations/index.js';
import { cloudstorageOptions } from './options.js';
import { CloudstorageRepository } from './repository.js';
import { cloudstorageRoutes } from './routes.js';
import { CloudstorageService } from './service.js';

declare module '../modules.js' {
  interface EdgeModules {
    cloudstorage: CloudstorageService;
  }
}

export const cloudstorageModule: EdgeModule<'cloudstorage', typeof cloudstorageOptions> = {
  name: 'cloudstorage',
  options: cloudstorageOptions,
  migrations: cloudstorageMigrations,
  start: (ctx) =>
    new CloudstorageService(
      new CloudstorageRepository(ctx.database),
      SecretBox.forDataDir(ctx.dataDir),
      ctx.dataDir,
      {
        partSize: ctx.config.cloudstoragePartSize * 1024 * 1024,
        retries: ctx.config.cloudstorageRetries,
        retryDelayMs: ctx.config.cloudstorageRetryDelay,
        requestTimeoutMs: ctx.config.cloudstorageRequestTimeout,
        maxBytesPerSecond: ctx.config.cloudstorageMaxBytesPerSecond,
        maxFiles: ctx.config.cloudstorageMaxFiles,
        syncIntervalSeconds: ctx.config.cloudstorageSyncInterval,
      },
      ctx.logger,
    ),
  mount: (ctx, storage) => ctx.app.register(cloudstorageRoutes, { storage }),
  listening: (_ctx, storage) => storage.start(),
  close: (storage) => storage.close(),
};
