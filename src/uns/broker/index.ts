/** The MQTT broker (aedes) with the namespace's authentication and rules, and its durable sessions. */
export { UnsBroker, type ClientInfo, type BrokerOptions } from './broker.js';
export { SqlPersistence } from './sql-persistence.js';
export { brokerMigrations } from './migrations/index.js';
export { brokerModule } from './module.js';
export { publishProblem, ruleVerdict, type RuleAction, type RuleVerdict } from './verdict.js';
export {
  brokerMetrics,
  disconnectClient,
  listConnections,
  MAX_LISTED_SUBSCRIPTIONS,
  type BrokerMetrics,
  type ConnectionView,
} from './inspect.js';
