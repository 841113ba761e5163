#!/usr/bin/env node
/**
 * The `millwright` command: `up` (the first look), one command per service, and administration
 * commands under each service. Argument parsing and output only; the work is done by the services.
 *
 * Only what a command needs is loaded: `--version` nothing, the client commands (`edge device
 * list`, `edge watch`, `uns watch`...) the typed clients (src/cli/client-commands.ts), the service
 * and administration commands the services (src/cli/services.ts, seconds of imports).
 *
 * Every error a person can cause is one line naming the fix (src/cli/hints.ts); `--debug` (or
 * MILLWRIGHT_DEBUG=1) adds the stack trace.
 */
import { Command, CommanderError } from 'commander';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import { ConfigError } from '../kernel/config.js';
import { AppError } from '../kernel/errors.js';
import { ConnectionError, MillwrightClientError } from '../client/errors.js';
import { CLIENT_COMMANDS, clientCommands } from './client-commands.js';
import { connectionHint, debugWanted, serviceOf } from './hints.js';

const argv = process.argv.slice(2);
const debug = debugWanted(argv);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
  process.stdout.write(`${MILLWRIGHT_VERSION}\n`);
  process.exit(0);
}

const program = new Command('millwright')
  .description('Millwright: an open industrial edge platform')
  .version(MILLWRIGHT_VERSION)
  .option('--debug', 'print stack traces with errors [MILLWRIGHT_DEBUG=1]')
  .showHelpAfterError('(add --help to see the commands and options)')
  // Options belong to the command they follow: `edge api-client create --data-dir X` is the
  // subcommand's --data-dir, not the edge's.
  .enablePositionalOptions()
  .exitOverride();

/** The first two words of the command line that are not options: `edge device` of `edge device list`. */
function commandWords(args: readonly string[]): string[] {
  return args.filter((a) => !a.startsWith('-')).slice(0, 2);
}

const [top, sub] = commandWords(argv.filter((a) => a !== '--debug'));
if ((top === 'edge' || top === 'uns') && sub !== undefined && CLIENT_COMMANDS[top].includes(sub)) {
  const parent = program
    .command(top)
    .description(top === 'edge' ? 'the edge service' : 'the unified namespace service')
    .enablePositionalOptions();
  await clientCommands(top, parent, sub);
} else if (top === 'manager') {
  // The manager and its administration commands: the manager's modules alone.
  (await import('./manager.js')).managerServiceCommands(program);
} else {
  await (await import('./services.js')).serviceCommands(program, top);
}

try {
  await program.parseAsync(process.argv.filter((a, i) => i < 2 || a !== '--debug'));
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version end with 0; every usage error (unknown option, missing argument, bad
    // choice) with 2, as docs/cli.md says.
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`millwright: ${explain(err)}\n`);
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(err instanceof ConfigError || err instanceof AppError ? 2 : 1);
}

/** One line for an error: its message, and the fix when the error is a known one. */
function explain(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ConfigError || err instanceof AppError) return message;
  if (err instanceof MillwrightClientError) {
    // The edge (or UNS) answered no, or could not be reached: its message and the fix.
    const hint =
      err instanceof ConnectionError ? connectionHint(message, serviceOf(process.argv)) : undefined;
    return hint ? `${message}\n  ${hint}` : message;
  }
  const hint = connectionHint(message, serviceOf(process.argv));
  if (hint) return `${message}\n  ${hint}`;
  return debug ? message : `${message} (--debug prints the stack trace)`;
}
