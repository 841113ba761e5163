/** MQTT accounts, their rules (compiled for the broker) and activation tokens for edge services. */
export {
  AccountService,
  AC_TYPES,
  validateRules,
  type Account,
  type AccountChange,
  type Rule,
  type ActivationView,
} from './service.js';
export { AccountRepository } from './repository.js';
export { accountMigrations } from './migrations/index.js';
export {
  CompiledRules,
  ConnectionRules,
  PERMS,
  filterProblem,
  topicMatches,
  matchLevels,
  type Perm,
  type RuleSpec,
} from './rules.js';
export { activationRoutes } from './routes.js';
export { accountsModule } from './module.js';
