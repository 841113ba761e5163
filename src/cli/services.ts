/**
 * The service commands of `millwright`: `up`, `edge`, `uns`, `manager` (each starts its service),
 * with the administration commands under them. Loaded only for those commands (src/cli/main.ts).
 * Importing a service costs a second or more of module loading, so only the service the command
 * line names is imported (`millwright edge` loads neither the manager's nor the UNS's modules);
 * `up`, the whole help and an unknown word load them all.
 */
import type { Command } from 'commander';
import { ConfigError } from '../kernel/config.js';
import { didYouMean } from './hints.js';

const SERVICES: readonly string[] = ['edge', 'uns', 'manager'];

/** Adds the service commands to `program`: only `top`'s when it names a service, else every one. */
export async function serviceCommands(program: Command, top?: string): Promise<void> {
  const only = top !== undefined && SERVICES.includes(top) ? top : undefined;
  if (!only) (await import('./up-command.js')).upCommand(program);
  if (!only || only === 'edge') await (await import('./edge-command.js')).edgeCommand(program);
  if (!only || only === 'uns') await (await import('./uns-command.js')).unsCommand(program);
  if (!only || only === 'manager') (await import('./manager-command.js')).managerCommand(program);
  for (const cmd of program.commands) if (cmd.commands.length > 0) refuseStrayWords(cmd);
}

/**
 * A service command runs its service when no subcommand matches: a mistyped subcommand (`edge
 * devices list`) would be an excess argument, answered with the whole help. Instead: one line,
 * with the subcommand it probably meant.
 */
function refuseStrayWords(cmd: Command): void {
  cmd.allowExcessArguments(true);
  cmd.hook('preAction', (_self, action) => {
    if (action !== cmd || cmd.args.length === 0) return;
    const word = cmd.args[0]!;
    const guess = didYouMean(
      word,
      cmd.commands.map((c) => c.name()),
    );
    throw new ConfigError(
      `unknown command "${cmd.name()} ${word}"${guess ? ` (did you mean "${cmd.name()} ${guess}"?)` : ''}; \`millwright ${cmd.name()} --help\` lists its commands`,
    );
  });
}
