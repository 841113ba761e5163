/**
 * The service commands of `millwright`: `up`, `edge`, `uns`, `manager` (each starts its service),
 * with the administration commands under them. Loaded only for those commands (src/cli/main.ts):
 * importing the services costs seconds, which `--version` and the client commands do not pay.
 */
import type { Command } from 'commander';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import { EDGE_OPTIONS, toEdgeConfig, type EdgeConfig } from '../edge/service.js';
import { startEdge, type EdgeService } from '../edge/service.js';
import { addServiceOptions, prefixedFlags, resolveOptions } from './options.js';
import { edgeAdminCommands } from './edge-admin.js';
import { edgeConfigCommands } from './edge-config.js';
import { join } from 'node:path';
import { loadConfig } from '../kernel/config.js';
import { UNS_OPTIONS, toUnsConfig, type UnsConfig } from '../uns/service.js';
import { startUns, type UnsService } from '../uns/service.js';
import { unsAdminCommands } from './uns-admin.js';
import { startUnsFeed } from './uns-feed.js';
import type { ReadyService } from '../kernel/ready.js';
import { announceManager, enrolLocalEdge, managerReady, managerServiceCommands } from './manager.js';
import { MANAGER_OPTIONS, toManagerConfig } from '../manager/service.js';
import { startManager } from '../manager/service.js';
import { clientCommands } from './client-commands.js';
import { ready, refuseStrayWords, stopOnSignals } from './service-run.js';

/** The UNS's and the manager's options under `up`: `--uns-<option>`, `--manager-<option>` (not --host). */
const UP_UNS_OPTIONS = UNS_OPTIONS.filter((o) => o.name !== 'host');
const UP_MANAGER_OPTIONS = MANAGER_OPTIONS.filter((o) => o.name !== 'host');

/** Adds every command to `program`. */
export async function serviceCommands(program: Command): Promise<void> {
  upCommand(program);
  const edge = addServiceOptions(
    program
      .command('edge')
      .description(
        'the edge service, as deployed on a site; its subcommands administer it (API clients, tokens, access keys, the admin password, devices and tags, live values)',
      ),
    'edge',
    EDGE_OPTIONS,
  ).action(async () => {
    const config = toEdgeConfig(resolveOptions(edge, 'edge', EDGE_OPTIONS));
    const service = await startEdge(config);
    process.stdout.write(announce(service, config));
    ready({ edge: edgeReady(service, config) });
    stopOnSignals([service]);
  });
  edge.enablePositionalOptions();
  edgeAdminCommands(edge);
  edgeConfigCommands(edge);
  await clientCommands('edge', edge);

  const uns = addServiceOptions(
    program
      .command('uns')
      .description(
        'the unified namespace service (MQTT broker, accounts and rules), as deployed; its subcommands administer it',
      ),
    'uns',
    UNS_OPTIONS,
  ).action(async () => {
    const config = toUnsConfig(resolveOptions(uns, 'uns', UNS_OPTIONS));
    const service = await startUns(config);
    process.stdout.write(`Millwright ${MILLWRIGHT_VERSION}\n${announceUns(service, config)}`);
    ready({ uns: unsReady(service, config) });
    stopOnSignals([service]);
  });
  uns.enablePositionalOptions();
  unsAdminCommands(uns);
  await clientCommands('uns', uns);

  for (const cmd of program.commands) if (cmd.commands.length > 0) refuseStrayWords(cmd);
  // The manager refuses its own stray words (src/cli/manager.ts).
  managerServiceCommands(program);
}

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

function upCommand(program: Command): void {
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
  ).action(async () => {
    const sources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {};
    const config = toEdgeConfig(resolveOptions(up, 'edge', EDGE_OPTIONS, sources));
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
      pickFreePorts: (['port', 'mqtt-port', 'mqtts-port'] as const).filter(
        (o) => unsSources[o] === 'default',
      ),
    });
    // The edge once the UNS listens (its UNS feed, made by an earlier `up`, connects at once). A
    // default port that is taken is replaced by a free one; a port the user chose is not.
    const edge = await startEdge(config, {
      pickFreePorts: (['port', 'datahub-port', 'opcua-port'] as const).filter(
        (o) => sources[o] === 'default',
      ),
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
    banner += announceManager(manager, mConfig);
    const enrolled = await enrolLocalEdge(edge, manager);
    if (enrolled) banner += `  local edge enrolled in the manager as device ${enrolled}\n`;
    process.stdout.write(banner + credentials.map((l) => `${l}\n`).join(''));
    ready({
      edge: edgeReady(edge, config),
      uns: unsReady(uns, unsConfig),
      manager: managerReady(manager, mConfig),
    });
    stopOnSignals([edge, uns, manager]);
  });
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function edgeReady(edge: EdgeService, config: EdgeConfig): ReadyService {
  const natsUrl = edge.datahub.gateway?.url.replace('127.0.0.1', 'localhost');
  const opcua = edge.shell.module('opcua').server;
  return {
    url: edge.url,
    dataDir: config.dataDir,
    ...(natsUrl ? { natsUrl } : {}),
    ports: {
      port: portOf(edge.url),
      ...(natsUrl ? { 'datahub-port': portOf(natsUrl) } : {}),
      ...(opcua ? { 'opcua-port': opcua.port } : {}),
    },
    ...(opcua ? { opcuaUrl: opcua.endpointUrl } : {}),
    ...(edge.shell.module('console').enabled ? { consoleUrl: `${edge.url}/` } : {}),
    ...(edge.firstRun ? { firstRun: edge.firstRun } : {}),
  };
}

function unsReady(uns: UnsService, config: UnsConfig): ReadyService {
  return {
    url: uns.url,
    dataDir: config.dataDir,
    mqttUrl: uns.mqttUrl,
    mqttsUrl: uns.mqttsUrl,
    wsUrl: uns.wsUrl,
    ports: { port: portOf(uns.url), 'mqtt-port': portOf(uns.mqttUrl), 'mqtts-port': portOf(uns.mqttsUrl) },
    ...(uns.firstRun ? { firstRun: uns.firstRun } : {}),
  };
}

function announceUns(service: UnsService, config: UnsConfig, withCredentials = true): string {
  const lines = [
    ...service.notes.map((n) => `  ${n}`),
    `  unified namespace ${service.url}/mqtt/gql  (GraphQL; token: POST ${service.url}/auth/realms/standalone/protocol/openid-connect/token)`,
    `  MQTT           ${service.mqttUrl}  ${service.mqttsUrl}  ${service.wsUrl}`,
    `  UNS data       ${config.dataDir}`,
  ];
  lines.push(
    `  UNS users and accounts: millwright uns user create --data-dir ${config.dataDir} --username U --password P`,
  );
  if (withCredentials) lines.push(...unsCredentials(service));
  return `${lines.join('\n')}\n`;
}

/** The UNS's first-run administrator, for the end of the banner. */
function unsCredentials(service: UnsService): string[] {
  if (service.firstRun?.password) {
    return [
      `  UNS administrator: user "${service.firstRun.username}", password "${service.firstRun.password}" (shown once)`,
    ];
  }
  if (service.firstRun) {
    return [
      `  UNS administrator: user "${service.firstRun.username}" with the password of MILLWRIGHT_UNS_ADMIN_PASSWORD`,
    ];
  }
  return [];
}

function announce(edge: EdgeService, config: EdgeConfig, withCredentials = true): string {
  const lines = [
    `Millwright ${MILLWRIGHT_VERSION}`,
    ...edge.notes.map((n) => `  ${n}`),
    `  edge service   ${edge.url}${config.http ? '  (plain HTTP)' : '  (HTTPS, self-signed certificate unless --tls-cert)'}`,
    `  data directory ${config.dataDir}`,
  ];
  if (edge.datahub.gateway)
    lines.splice(2, 0, `  DataHub (NATS) ${edge.datahub.gateway.url.replace('127.0.0.1', 'localhost')}`);
  const opcua = edge.shell.module('opcua').server;
  if (opcua) {
    lines.splice(
      edge.datahub.gateway ? 3 : 2,
      0,
      `  OPC UA server  ${opcua.endpointUrl}  (users and security: ${edge.url}/opcua/v2)`,
    );
  }
  // The console first: it is where a person starts.
  const web = edge.shell.module('console');
  if (web.enabled) {
    const at = lines.findIndex((l) => l.startsWith('  edge service'));
    lines.splice(
      at,
      0,
      `  edge console   ${edge.url}/${web.built ? '  (open it in a browser)' : '  (not built: run npm run build)'}`,
    );
  }
  lines.push(
    `  API client for scripts: millwright edge api-client create --data-dir ${config.dataDir} --name NAME`,
  );
  if (withCredentials) lines.push(...edgeCredentials(edge));
  return `${lines.join('\n')}\n`;
}

/** The edge's first-run login, for the end of the banner. */
function edgeCredentials(edge: EdgeService): string[] {
  if (edge.firstRun?.password) {
    return [
      `  first-run login: user "${edge.firstRun.username}", password "${edge.firstRun.password}"`,
      '    (shown once; POST /auth/v2/login, then accept the EULA and change the password)',
    ];
  }
  if (edge.firstRun) {
    return [
      `  first-run login: user "${edge.firstRun.username}" with the password of MILLWRIGHT_EDGE_ADMIN_PASSWORD`,
    ];
  }
  return [];
}
