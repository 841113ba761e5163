/** Companies, projects and devices of the manager, activation, and the sealed edge credentials. */
export { fleetModule } from './module.js';
export {
  FleetService,
  BRIDGE_TARGET_CACHE_SIZE,
  BRIDGE_TARGET_TTL_MS,
  type BridgeTarget,
  type DeviceFacts,
} from './service.js';
export { FleetRepository } from './repository.js';
export { SecretBox } from '../../kernel/secret-box.js';
