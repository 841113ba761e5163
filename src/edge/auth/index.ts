/** The edge's identity module: admin bootstrap, API clients, API tokens, request authentication. */
export {
  AuthService,
  LOCAL_PROVIDER_ID,
  ADMIN_USERNAME,
  EULA_VERSION,
  clientView,
  tokenView,
} from './service.js';
export { AuthRepository } from './repository.js';
export { authMigrations } from './migrations/index.js';
export { installAuthHook } from './hook.js';
export { authRoutes } from './routes.js';
export { authModule, type EdgeAuth } from './module.js';
