/** Namespaces and the topic tree on the UNS's seam. */
import type { UnsModule } from '../modules.js';
import { namespaceMigrations } from './migrations.js';
import { NamespaceRepository } from './repository.js';
import { NamespaceService } from './service.js';

declare module '../modules.js' {
  interface UnsModules {
    namespace: NamespaceService;
  }
}

export const namespaceModule: UnsModule<'namespace'> = {
  name: 'namespace',
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
