/**
 * The service commands of `millwright`: `up`, `edge`, `uns`, `manager` (each starts its service),
 * with the administration commands under them. Loaded only for those commands (src/cli/main.ts).
 * Importing a service costs a second or more of module loading, so only the service the command
 * line names is imported (`millwright edge` loads neither the manager's nor the UNS's modules;
 * `millwright manager` is dispatched by main.ts straight to src/cli/manager.ts); `up`, the whole
 * help and an unknown word load them all.
 */
import type { Command } from 'commander';
import { refuseStrayWords } from './service-run.js';

const SERVICES: readonly string[] = ['edge', 'uns', 'manager'];

/** Adds the service commands to `program`: only `top`'s when it names a service, else every one. */
export async function serviceCommands(program: Command, top?: string): Promise<void> {
  const only = top !== undefined && SERVICES.includes(top) ? top : undefined;
  if (!only) (await import('./up-command.js')).upCommand(program);
  if (!only || only === 'edge') await (await import('./edge-command.js')).edgeCommand(program);
  if (!only || only === 'uns') await (await import('./uns-command.js')).unsCommand(program);
  for (const cmd of program.commands) if (cmd.commands.length > 0) refuseStrayWords(cmd);
  // The manager refuses its own stray words (src/cli/manager.ts).
  if (!only || only === 'manager') (await import('./manager.js')).managerServiceCommands(program);
}
