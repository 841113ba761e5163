/** The UNS's identity provider: users, the password grant, the realm policy, request authentication. */
export { IdentityService, ADMIN_USERNAME, REALM, USER_ROLES, type UserView } from './service.js';
export { IdentityRepository, type UserRole } from './repository.js';
export { identityMigrations } from './migrations/index.js';
export { identityRoutes, TOKEN_PATHS } from './routes.js';
export { identityModule, type UnsIdentity } from './module.js';
