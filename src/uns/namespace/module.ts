/** Namespaces and the topic tree on the UNS's seam. */
import type { UnsModule } from '../modules.js';
import { namespaceOptions } from './options.js';
import { namespaceMigrations } from './migrations/index.js';
import { NamespaceRepository } from './repository.js';
import { NamespaceService } from './service.js';

declare module '../modules.js' {
  interface UnsModules {
    namespace: NamespaceService;
  }
}

export const namespaceModule: UnsModule<'namespace', typeof namespaceOptions> = {
  name: 'namespace',
  options: namespaceOptions,
  migrations: namespaceMigrations,
  async start(ctx) {
    const namespaces = new NamespaceService(new NamespaceRepository(ctx.database.db), {
      maxTopics: ctx.config.maxTopics,
      maxTopicTreeBytes: ctx.config.maxTopicTreeBytes,
      logger: ctx.logger,
    });
    await namespaces.load();
    return namespaces;
  },
};
