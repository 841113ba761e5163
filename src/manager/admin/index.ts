/** The admin console API of the manager: its own HTTPS app, on which other modules mount admin routes. */
export { adminModule, MANAGER_API_VERSION, type AdminConsole } from './module.js';
