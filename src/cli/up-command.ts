/**
 * `millwright up`: the first look, the edge, the UNS and the manager in one process. Imports all
 * three services (src/cli/services.ts loads it only when `up` or the whole help is asked for).
 */
import type { Command } from 'commander';
import { join } from 'node:path';
import { loadConfig } from '../kernel/config.js';
import { EDGE_OPTIONS } from '../edge/option-specs.js';
import { UNS_OPTIONS } from '../uns/option-specs.js';
import { MANAGER_OPTIONS } from '../manager/option-specs.js';
import type { UnsService } from '../uns/service.js';
import { addServiceOptions, prefixedFlags, resolveOptions } from './options.js';
import { announceManager, enrolLocalEdge, managerCredentials, managerReady } from './manager.js';
import { announce, edgeCredentials, edgeReady } from './edge-command.js';
import { announceUns, unsCredentials, unsReady } from './uns-command.js';
import { ready, stopOnSignals } from './service-run.js';

/** The UNS's and the manager's options under `up`: `--uns-<option>`, `--manager-<option>` (not --host). */
const UP_UNS_OPTIONS = UNS_OPTIONS.filter((o) => o.name !== 'host');
const UP_MANAGER_OPTIONS = MANAGER_OPTIONS.filter((o) => o.name !== 'host');

/** `millwright up`: the UNS first (the edge's UNS feed connects to it), then the edge, then the manager. */
/**
 * `--log-level` and `--log-format` given to `up` hold for every service, unless a service has its
 * own (`--uns-log-format`, MILLWRIGHT_UNS_LOG_FORMAT...).
 */
function sharedLogFlags(
  config: { logLevel: string; logFormat: string },
  sources: Record<string, 'flag' | 'env' | 'file' | 'default'>,
  prefix: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [option, value] of [
    ['log-level', config.logLevel],
    ['log-format', config.logFormat],
  ] as const) {
    const variable = `MILLWRIGHT_${prefix}_${option.toUpperCase().replace(/-/g, '_')}`;
    if (sources[option] !== 'default' && process.env[variable] === undefined) out[option] = value;
  }
  return out;
}

export function upCommand(program: Command): void {
  const up = addServiceOptions(
    addServiceOptions(
      addServiceOptions(
        program
          .command('up')
          .description(
            'the first look: the edge service, the unified namespace (UNS) and the edge manager in one process, with embedded defaults; prints every address and first-run credential',
          )
          .addHelpText(
            'after',
            '\nThe edge options are the flags without a prefix (as `millwright edge`); the UNS and the manager take\n' +
              'theirs with a prefix (`--uns-port`, `--manager-port`) or from MILLWRIGHT_UNS_* / MILLWRIGHT_MANAGER_*.\n' +
              'With --data-dir DIR, the UNS keeps its data in DIR/uns and the manager in DIR/manager.',
          ),
        'edge',
        EDGE_OPTIONS,
      ),
      'uns',
      UP_UNS_OPTIONS,
      'uns-',
    ),
    'manager',
    UP_MANAGER_OPTIONS,
    'manager-',
  ).action(() => runUp(up));
}

/** `millwright up`: the UNS, then the edge, then the manager with the edge enrolled in it. */
async function runUp(up: Command): Promise<void> {
  const sources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {};
  const values = resolveOptions(up, 'edge', EDGE_OPTIONS, sources);
  // The services' modules are loaded here, not for the help or a usage error (seconds of CPU).
  const [
    { startEdge, toEdgeConfig },
    { startUns, toUnsConfig },
    { startManager, toManagerConfig },
    { startUnsFeed },
  ] = await Promise.all([
    import('../edge/service.js'),
    import('../uns/service.js'),
    import('../manager/service.js'),
    import('./uns-feed.js'),
  ]);
  const config = toEdgeConfig(values);
  // The UNS beside the edge: its options from MILLWRIGHT_UNS_* (or defaults), its data in
  // <data-dir>/uns when --data-dir is given; a taken default port is replaced by a free one.
  const unsSources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {};
  const shared = (prefix: string) => sharedLogFlags(config, sources, prefix);
  const unsFlags = {
    host: config.host,
    ...shared('UNS'),
    ...(sources['data-dir'] === 'default' ? {} : { 'data-dir': join(config.dataDir, 'uns') }),
    ...prefixedFlags(up, UP_UNS_OPTIONS, 'uns-'),
  };
  const unsConfig = toUnsConfig(loadConfig('uns', UNS_OPTIONS, unsFlags, process.env, unsSources));
  const uns: UnsService = await startUns(unsConfig, {
    pickFreePorts: (['port', 'mqtt-port', 'mqtts-port'] as const).filter((o) => unsSources[o] === 'default'),
  });
  // The edge once the UNS listens (its UNS feed, made by an earlier `up`, connects at once). A
  // default port that is taken is replaced by a free one; a port the user chose is not.
  const edge = await startEdge(config, {
    pickFreePorts: (['port', 'datahub-port', 'opcua-port'] as const).filter((o) => sources[o] === 'default'),
  }).catch(async (err: unknown) => {
    await uns.close();
    throw err;
  });
  // The banner is printed whole, once everything is up (log lines would otherwise split it);
  // the first-run credentials last, where a person looks.
  const credentials = [...edgeCredentials(edge), ...unsCredentials(uns)];
  let banner = announce(edge, config, false) + announceUns(uns, unsConfig, false);
  const feed = await startUnsFeed(edge, uns, config);
  for (const line of feed?.split('\n') ?? []) {
    if (/\(shown once\)/.test(line)) credentials.push(line);
    else banner += `${line}\n`;
  }
  // The manager beside them (MILLWRIGHT_MANAGER_*, data in <data-dir>/manager), the edge enrolled in it.
  const mSources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {};
  const mFlags = {
    host: config.host,
    ...shared('MANAGER'),
    ...(sources['data-dir'] === 'default' ? {} : { 'data-dir': join(config.dataDir, 'manager') }),
    ...prefixedFlags(up, UP_MANAGER_OPTIONS, 'manager-'),
  };
  const mConfig = toManagerConfig(loadConfig('manager', MANAGER_OPTIONS, mFlags, process.env, mSources));
  const manager = await startManager(mConfig, {
    pickFreePorts: (['port', 'admin-port'] as const).filter((o) => mSources[o] === 'default'),
  }).catch(async (err: unknown) => {
    await Promise.all([edge.close(), uns.close()]);
    throw err;
  });
  banner += announceManager(manager, mConfig, false);
  credentials.unshift(...managerCredentials(manager));
  const enrolled = await enrolLocalEdge(edge, manager);
  if (enrolled) banner += `  local edge enrolled in the manager as device ${enrolled}\n`;
  process.stdout.write(banner + credentials.map((l) => `${l}\n`).join(''));
  ready({
    edge: edgeReady(edge, config),
    uns: unsReady(uns, unsConfig),
    manager: managerReady(manager, mConfig),
  });
  stopOnSignals([edge, uns, manager]);
}
