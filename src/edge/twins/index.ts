/**
 * Digital twins at `/digital-twins`: models, instances, static and dynamic attributes,
 * parameters, JSONata transformations, hierarchies and asset placements (the service), and the
 * runtime that assembles each instance's payload from the DataHub (and the UNS broker) and
 * publishes it on the instance's `Topic`.
 */
export { twinsMigrations } from './migrations/index.js';
export { TwinsService, DEFAULT_TWINS_LIMITS, type TwinsLimits } from './service.js';
export { TwinRuntime, type UnsSource } from './runtime.js';

export {
  twinsModule,
  createTwins,
  mountTwins,
  twinsSchema,
  TWINS_PATH,
  type TwinsApi,
  type TwinsOptions,
} from './module.js';
