/**
 * `millwright uns`: the unified namespace service (its options, its banner and ready record), with
 * the administration and client commands under it. Imported only when the command line names
 * `uns` or `up`, or asks for the whole help (src/cli/services.ts).
 */
import type { Command } from 'commander';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import type { ReadyService } from '../kernel/ready.js';
import type { UnsConfig, UnsService } from '../uns/service.js';
import { UNS_OPTIONS } from '../uns/option-specs.js';
import { addServiceOptions, resolveOptions } from './options.js';
import { unsAdminCommands } from './uns-admin.js';
import { clientCommands } from './client-commands.js';
import { portOf, ready, stopOnSignals } from './service-run.js';

/** Adds `uns` and its subcommands to `program`. */
export async function unsCommand(program: Command): Promise<void> {
  const uns = addServiceOptions(
    program
      .command('uns')
      .description(
        'the unified namespace service (MQTT broker, accounts and rules), as deployed; its subcommands administer it',
      ),
    'uns',
    UNS_OPTIONS,
  ).action(async () => {
    const values = resolveOptions(uns, 'uns', UNS_OPTIONS);
    // The UNS's modules are loaded here, not for the help or a usage error.
    const { startUns, toUnsConfig } = await import('../uns/service.js');
    const config = toUnsConfig(values);
    const service = await startUns(config);
    process.stdout.write(`Millwright ${MILLWRIGHT_VERSION}\n${announceUns(service, config)}`);
    ready({ uns: unsReady(service, config) });
    stopOnSignals([service]);
  });
  uns.enablePositionalOptions();
  unsAdminCommands(uns);
  await clientCommands('uns', uns);
}

export function unsReady(uns: UnsService, config: UnsConfig): ReadyService {
  return {
    url: uns.url,
    dataDir: config.dataDir,
    mqttUrl: uns.mqttUrl,
    mqttsUrl: uns.mqttsUrl,
    wsUrl: uns.wsUrl,
    ports: { port: portOf(uns.url), 'mqtt-port': portOf(uns.mqttUrl), 'mqtts-port': portOf(uns.mqttsUrl) },
    ...(uns.firstRun ? { firstRun: uns.firstRun } : {}),
    ...(uns.shell.module('console').enabled ? { consoleUrl: `${uns.url}/` } : {}),
  };
}

export function announceUns(service: UnsService, config: UnsConfig, withCredentials = true): string {
  const lines = [
    ...service.notes.map((n) => `  ${n}`),
    `  unified namespace ${service.url}/mqtt/gql  (GraphQL; token: POST ${service.url}/auth/realms/standalone/protocol/openid-connect/token)`,
    `  MQTT           ${service.mqttUrl}  ${service.mqttsUrl}  ${service.wsUrl}`,
    `  UNS data       ${config.dataDir}`,
  ];
  const web = service.shell.module('console');
  if (web.enabled) {
    lines.push(
      `  UNS console    ${service.url}/${web.built ? '  (open it in a browser)' : '  (not built: run npm run build)'}`,
    );
  }
  lines.push(
    `  UNS users and accounts: millwright uns user create --data-dir ${config.dataDir} --username U --password P`,
  );
  if (withCredentials) lines.push(...unsCredentials(service));
  return `${lines.join('\n')}\n`;
}

/** The UNS's first-run administrator, for the end of the banner. */
export function unsCredentials(service: UnsService): string[] {
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
