/**
 * `millwright manager`: the edge manager, with its administration commands (src/cli/manager.ts).
 * Imported only when the command line names `manager`, or asks for the whole help.
 */
import type { Command } from 'commander';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import { announceManager, managerCommands, managerReady } from './manager.js';
import { ready, stopOnSignals } from './run-service.js';

/** Adds `manager` and its subcommands to `program`. */
export function managerCommand(program: Command): void {
  managerCommands(program, (service, config) => {
    process.stdout.write(`Millwright ${MILLWRIGHT_VERSION}\n${announceManager(service, config)}`);
    ready({ manager: managerReady(service, config) });
    stopOnSignals([service]);
  });
}
