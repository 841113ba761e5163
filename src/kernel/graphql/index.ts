/** GraphQL mounting shared by the services; see `mount.ts`. */
export * from './mount.js';
export * from './limits.js';
export * from './permission.js';
export * from './defaults.js';
