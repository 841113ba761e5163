/** The manager console module's public surface: what service.ts imports. */
export { managerConsoleModule, type ManagerConsole } from './module.js';
