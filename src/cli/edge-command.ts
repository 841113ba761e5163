/**
 * `millwright edge`: the edge service (its options, its banner and ready record), with the
 * administration and client commands under it. Imported only when the command line names `edge`
 * or `up`, or asks for the whole help (src/cli/services.ts). The edge's modules are imported by
 * the command's action only: its options come from src/edge/option-specs.ts.
 */
import type { Command } from 'commander';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import type { ReadyService } from '../kernel/ready.js';
import type { EdgeConfig, EdgeService } from '../edge/service.js';
import { EDGE_OPTIONS } from '../edge/option-specs.js';
import { addServiceOptions, resolveOptions } from './options.js';
import { edgeAdminCommands } from './edge-admin.js';
import { edgeConfigCommands } from './edge-config.js';
import { clientCommands } from './client-commands.js';
import { portOf, ready, stopOnSignals } from './service-run.js';

/** Adds `edge` and its subcommands to `program`. */
export async function edgeCommand(program: Command): Promise<void> {
  const edge = addServiceOptions(
    program
      .command('edge')
      .description(
        'the edge service, as deployed on a site; its subcommands administer it (API clients, tokens, access keys, the admin password, devices and tags, live values)',
      ),
    'edge',
    EDGE_OPTIONS,
  ).action(async () => {
    const values = resolveOptions(edge, 'edge', EDGE_OPTIONS);
    // The edge's modules are loaded here, not for the help or a usage error (seconds of CPU).
    const { startEdge, toEdgeConfig } = await import('../edge/service.js');
    const config = toEdgeConfig(values);
    const service = await startEdge(config);
    process.stdout.write(announce(service, config));
    ready({ edge: edgeReady(service, config) });
    stopOnSignals([service]);
  });
  edge.enablePositionalOptions();
  edgeAdminCommands(edge);
  edgeConfigCommands(edge);
  await clientCommands('edge', edge);
}

export function edgeReady(edge: EdgeService, config: EdgeConfig): ReadyService {
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

export function announce(edge: EdgeService, config: EdgeConfig, withCredentials = true): string {
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
export function edgeCredentials(edge: EdgeService): string[] {
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
