#!/usr/bin/env node
/**
 * The `millwright` command: `up` (the first look), one command per service, and administration
 * commands under each service. Argument parsing and output only; the work is done by the services.
 */
import { Command, CommanderError } from 'commander';
import { ConfigError, PortInUseError } from '../kernel/config.js';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import { AppError } from '../kernel/errors.js';
import { EDGE_OPTIONS, toEdgeConfig, type EdgeConfig } from '../edge/options.js';
import { startEdge, type EdgeService } from '../edge/service.js';
import { addServiceOptions, resolveOptions } from './options.js';
import { edgeAdminCommands } from './edge-admin.js';

const program = new Command('millwright')
  .description('Millwright: an open industrial edge platform')
  .version(MILLWRIGHT_VERSION)
  .showHelpAfterError()
  // Options belong to the command they follow: `edge api-client create --data-dir X` is the
  // subcommand's --data-dir, not the edge's.
  .enablePositionalOptions()
  .exitOverride();

const up = addServiceOptions(
  program
    .command('up')
    .description(
      'the first look: start the platform in one process with embedded defaults (for now the edge service)',
    ),
  'edge',
  EDGE_OPTIONS,
).action(async () => {
  const sources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {};
  const config = toEdgeConfig(resolveOptions(up, 'edge', EDGE_OPTIONS, sources));
  let edge: EdgeService;
  try {
    edge = await startEdge(config);
  } catch (err) {
    if (!(err instanceof PortInUseError) || sources.port !== 'default') throw err;
    process.stdout.write(`port ${config.port} is taken; the edge service takes a free port instead\n`);
    edge = await startEdge({ ...config, port: 0 });
  }
  announce(edge, config);
  stopOnSignals([edge]);
});

const edge = addServiceOptions(
  program
    .command('edge')
    .description('the edge service, as deployed on a site (see `millwright edge --help`)'),
  'edge',
  EDGE_OPTIONS,
).action(async () => {
  const config = toEdgeConfig(resolveOptions(edge, 'edge', EDGE_OPTIONS));
  const service = await startEdge(config);
  announce(service, config);
  stopOnSignals([service]);
});
edge.enablePositionalOptions();
edgeAdminCommands(edge);

function announce(edge: EdgeService, config: EdgeConfig): void {
  const lines = [
    `Millwright ${MILLWRIGHT_VERSION}`,
    `  edge service   ${edge.url}${config.http ? '  (plain HTTP)' : '  (HTTPS, self-signed certificate unless --tls-cert)'}`,
    `  data directory ${config.dataDir}`,
  ];
  if (edge.firstRun?.password) {
    lines.push(
      `  first-run login: user "${edge.firstRun.username}", password "${edge.firstRun.password}"`,
      '    (shown once; POST /auth/v2/login, then accept the EULA and change the password)',
    );
  } else if (edge.firstRun) {
    lines.push(
      `  first-run login: user "${edge.firstRun.username}" with the password of MILLWRIGHT_EDGE_ADMIN_PASSWORD`,
    );
  }
  lines.push(
    `  API client for scripts: millwright edge api-client create --data-dir ${config.dataDir} --name NAME`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the stores, exit 0. The
 * handlers are installed before anything starts, so that a signal during start-up stops the
 * services as soon as they are up instead of killing the process half-way. A second signal exits
 * at once.
 */
const running: { close(): Promise<void> }[] = [];
let stopRequested: string | null = null;
let stopping = false;

function stopOnSignals(services: { close(): Promise<void> }[]): void {
  running.push(...services);
  if (stopRequested) stopAll(stopRequested);
}

function stopAll(signal: string): void {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`${signal}: stopping\n`);
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

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exit(err.exitCode);
  }
  if (err instanceof ConfigError || err instanceof AppError) {
    process.stderr.write(`millwright: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`millwright: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}
