/** The manager's identity module: API tokens, users, roles and the authentication hook. */
export {
  ManagerAuthService,
  MANAGER_ROLES,
  roleAt,
  strongestRole,
  requireRole,
  isGlobal,
  type Principal,
  type Grant,
  type Scope,
  type ManagerRole,
} from './service.js';
export { ManagerAuthRepository } from './repository.js';
export { managerAuthMigrations } from './migrations/index.js';
export { installManagerAuthHook, principalOf, requestToken, type ManagerAuthContext } from './hook.js';
export { adminAuthRoutes, whoamiRoutes } from './routes.js';
export { managerAuthModule } from './module.js';
export { consoleSessionRoutes } from './console-session.js';
export { Realm, REALM, REALM_PATH, OIDC_PATH, CONSOLE_CLIENT_ID } from './realm.js';
export { CONSOLE_SECURITY_HEADERS } from './realm-page.js';
export { SESSION_COOKIE, CSRF_COOKIE, checkCsrfConnectionInit } from './session.js';
