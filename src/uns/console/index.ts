/** The UNS console module's public surface: what service.ts and the CLI import. */
export { consoleModule, type UnsConsole } from './module.js';
