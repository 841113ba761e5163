/** The console module's public surface: what service.ts and the CLI import. */
export { consoleModule, type EdgeConsole } from './module.js';
