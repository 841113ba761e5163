/**
 * What every service command shares: the ready line and records, stopping on signals, and the
 * refusal of stray words. Light on purpose (no service is imported here): `millwright manager`
 * loads the manager alone (src/cli/main.ts), not the edge and the UNS.
 */
import type { Command } from 'commander';
import { ConfigError } from '../kernel/config.js';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import { formatReadyLine, removeReadyRecords, writeReadyRecords, type ReadyLine } from '../kernel/ready.js';
import { didYouMean } from './hints.js';

/**
 * A service command runs its service when no subcommand matches: a mistyped subcommand (`edge
 * devices list`) would be an excess argument, answered with the whole help. Instead: one line,
 * with the subcommand it probably meant.
 */
export function refuseStrayWords(cmd: Command): void {
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

/** The machine-readable ready line (src/kernel/ready.ts), printed once everything is up. */
export function ready(services: ReadyLine['services']): void {
  const line = { version: MILLWRIGHT_VERSION, pid: process.pid, services };
  // Beside the line, in each data directory: where the CLI's client commands find the services.
  records.push(...writeReadyRecords(line));
  process.stdout.write(`${formatReadyLine(line)}\n`);
}

/** The ready records this process wrote, removed when it stops. */
const records: string[] = [];
process.on('exit', () => removeReadyRecords(records));

/**
 * SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the stores, exit 0. The
 * handlers are installed before anything starts, so that a signal during start-up stops the
 * services as soon as they are up instead of killing the process half-way. A second signal exits
 * at once.
 */
const running: { close(): Promise<void> }[] = [];
let stopRequested: string | null = null;
let stopping = false;

export function stopOnSignals(services: { close(): Promise<void> }[]): void {
  running.push(...services);
  if (stopRequested) stopAll(stopRequested);
}

function stopAll(signal: string): void {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`${signal}: stopping\n`);
  removeReadyRecords(records);
  Promise.all(running.map((s) => s.close())).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`error while stopping: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}

function onSignal(signal: string): void {
  if (stopRequested) {
    process.stderr.write(`${signal} again: exiting at once\n`);
    process.exit(1);
  }
  stopRequested = signal;
  // Before a service is up (an admin command, or start-up), the signal waits for stopOnSignals.
  if (running.length > 0) stopAll(signal);
}

process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));

/** The port of a service's URL. */
export function portOf(url: string): number {
  return Number(new URL(url).port);
}
