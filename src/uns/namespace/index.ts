/** Namespaces (prefixes with default rules) and the browsable tree of topics. */
export { NamespaceService, type Namespace } from './service.js';
export { TopicTree, RATE_WINDOW_MS, type TopicNode } from './topic-tree.js';
export { namespaceMigrations } from './migrations/index.js';
export { namespaceModule } from './module.js';
