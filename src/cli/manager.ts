/**
 * `millwright manager` (the edge manager as deployed), its administration commands
 * (`manager token ...`, `manager user ...`, `manager company|project|activation-code create`),
 * managed on the data directory (or the configured database) whether or not the manager runs,
 * and the enrolment of the local edge into the local manager for `millwright up`.
 */
import { Command, Option } from 'commander';
import type { ManagerConfig, ManagerService } from '../manager/service.js';
import { MANAGER_OPTIONS } from '../manager/option-specs.js';
import type { ManagerAuthService, Principal } from '../manager/auth/index.js';
// The roles of --role, from the module's file that holds them (no module loaded:
// test/module-shape.test.ts says why this one is allowed).
import { MANAGER_ROLES } from '../manager/auth/roles.js';
import type { FleetService } from '../manager/fleet/index.js';
import { defaultListSpec } from './manager-list.js';
import type { ReadyService } from '../kernel/ready.js';
import type { EdgeService } from '../edge/service.js';
import { addServiceOptions, resolveOptions } from './options.js';
import { userInfo } from 'node:os';
import type { Database } from '../kernel/db/index.js';
import { AppError } from '../kernel/errors.js';
import type { AuditService } from '../manager/audit/index.js';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';
import { ready, refuseStrayWords, stopOnSignals } from './service-run.js';

const STORE_OPTIONS = MANAGER_OPTIONS.filter((o) => o.name === 'data-dir' || o.name === 'database-url');

/** The CLI acts as a global admin on the stores it opens. */
const CLI: Principal = {
  subject: 'cli',
  tokenId: 'cli',
  tokenName: 'cli',
  username: null,
  grants: [{ role: 'admin', companyId: null, projectId: null }],
};

function storeCommand(parent: Command, name: string, description: string): Command {
  return addServiceOptions(parent.command(name).description(description), 'manager', STORE_OPTIONS);
}

/** A change a CLI command makes, as the audit trail records it (the API's action names). */
interface CliChange<T> {
  module: string;
  action: string;
  /** What it acted on, from its input or its answer (never a secret). */
  target: (out: T | undefined) => string | null;
  /** The command's input worth keeping (never a secret). */
  details?: Record<string, unknown>;
  projectId?: string;
}

/** The person behind a CLI change: the operating-system user that ran it. */
function cliActor(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'unknown';
  }
}

async function withStores<T>(
  cmd: Command,
  fn: (s: { auth: ManagerAuthService; fleet: FleetService }) => Promise<T>,
  change?: CliChange<T>,
): Promise<void> {
  const values = resolveOptions(cmd, 'manager', STORE_OPTIONS);
  const dataDir = values['data-dir'] as string;
  // The manager's stores are imported here, by a command's action: not for the help or a usage
  // error; and without the manager's modules (src/manager/offline-stores.ts).
  const { openManagerOfflineStores } = await import('../manager/offline-stores.js');
  const { default: pino } = await import('pino');
  const { database, auth, fleet, audit } = await openManagerOfflineStores(
    { dataDir, databaseUrl: values['database-url'] as string | undefined },
    pino({ level: 'silent' }),
  );
  try {
    const out = change
      ? await recorded(database, audit, change, () => fn({ auth, fleet }))
      : await fn({ auth, fleet });
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await database.close();
  }
}

/**
 * Runs a CLI change in one transaction with its audit record (origin `CLI`, actor
 * `cli:<os user>`), as the manager records an API call: a failed change leaves no change and one
 * record with outcome `failure`.
 */
async function recorded<T>(
  database: Database,
  audit: AuditService,
  change: CliChange<T>,
  fn: () => Promise<T>,
): Promise<T> {
  const user = cliActor();
  const input = {
    actor: `cli:${user}`,
    actorName: user,
    module: change.module,
    action: change.action,
    origin: 'CLI' as const,
    projectId: change.projectId ?? null,
    details: { command: `manager ${change.action}`, ...change.details },
  };
  const scope = database.openScope();
  let out: T;
  try {
    out = await database.runInScope(scope, fn);
  } catch (err) {
    await scope.finish(false);
    await audit
      .record({
        ...input,
        target: change.target(undefined),
        outcome: 'failure',
        status: err instanceof AppError ? err.status : null,
        details: { ...input.details, error: err instanceof AppError ? err.code : 'error' },
      })
      .catch(() => undefined); // the change's own error is the one to report
    throw err;
  }
  await scope.finish(true, async () => {
    await audit.record({ ...input, target: change.target(out), outcome: 'success' });
  });
  return out;
}

/**
 * `millwright manager` and its subcommands, run as a command of their own: src/cli/main.ts loads
 * only this file (and the manager) for them, not the edge and the UNS (tens of MiB of memory).
 */
export function managerServiceCommands(program: Command): void {
  const manager = managerCommands(program, (service, config) => {
    process.stdout.write(`Millwright ${MILLWRIGHT_VERSION}\n${announceManager(service, config)}`);
    ready({ manager: managerReady(service, config) });
    stopOnSignals([service]);
  });
  refuseStrayWords(manager);
}

/** `millwright manager` and its subcommands, on `program`. */
export function managerCommands(
  program: Command,
  run: (service: ManagerService, config: ManagerConfig) => void,
): Command {
  const manager = addServiceOptions(
    program.command('manager').description('the edge manager: fleet, activation, edge links and the bridge'),
    'manager',
    MANAGER_OPTIONS,
  ).action(async () => {
    const values = resolveOptions(manager, 'manager', MANAGER_OPTIONS);
    // The manager's modules are loaded here, not for the help or a usage error.
    const { startManager, toManagerConfig } = await import('../manager/service.js');
    const config = toManagerConfig(values);
    const service = await startManager(config);
    run(service, config);
  });
  manager.enablePositionalOptions();

  tokenCommands(manager);
  userCommands(manager);
  fleetCommands(manager);
  return manager;
}

/** The ready-line entry of the manager. */
export function managerReady(service: ManagerService, config: ManagerConfig): ReadyService {
  return {
    url: service.url,
    adminUrl: service.adminUrl,
    dataDir: config.dataDir,
    ports: { port: Number(new URL(service.url).port), 'admin-port': Number(new URL(service.adminUrl).port) },
  };
}

/** The manager's lines of the start-up banner. */
export function announceManager(
  service: ManagerService,
  config: ManagerConfig,
  withCredentials = true,
): string {
  const lines = [
    ...service.notes.map((n) => `  ${n}`),
    `  edge manager   ${service.url}/api/v1  (X-AuthToken; the edge link at ${service.url.replace(/^http/, 'ws')}/dm/link)`,
    `  admin console  ${service.adminUrl}/admin/v1`,
    `  manager data   ${config.dataDir}`,
    `  manager console ${service.url}/  (sign in through the realm: ${service.url}/auth/realms/standalone)`,
    `  API token:     millwright manager token create --data-dir ${config.dataDir} --name NAME`,
  ];
  if (withCredentials) lines.push(...managerCredentials(service));
  return `${lines.join('\n')}\n`;
}

/** The manager's first administrator, for the end of the banner (`up` puts it with the others). */
export function managerCredentials(service: ManagerService): string[] {
  const first = service.auth.firstRun;
  if (first?.password) {
    return [
      `  manager first administrator: user "${first.username}", password "${first.password}"`,
      '    (shown once; sign in to the manager console with it)',
    ];
  }
  if (first) {
    return [
      `  manager first administrator: user "${first.username}" with the password of MILLWRIGHT_MANAGER_ADMIN_PASSWORD`,
    ];
  }
  return [];
}

/**
 * `millwright up`: the local edge enrolled in the local manager (company "local", project
 * "local"), through the same steps as a remote edge: the manager's certificate pinned, an
 * activation code, the link. Nothing happens when the edge is already enrolled.
 */
export async function enrolLocalEdge(edge: EdgeService, manager: ManagerService): Promise<string | null> {
  const dm = edge.shell.module('dm');
  if ((await dm.status()).enrolled) return null;
  const fleet = manager.fleet;
  const companies = await fleet.listCompanies(CLI, {
    ...defaultListSpec(),
    filter: [{ field: 'companyName', op: 'eq', value: 'local' }],
  });
  const companyId = companies.items[0]?.id ?? (await fleet.createCompany(CLI, 'local')).id;
  const projects = await fleet.listProjects(
    CLI,
    { companyId },
    { ...defaultListSpec(), filter: [{ field: 'name', op: 'eq', value: 'local' }] },
  );
  const projectId = projects.items[0]?.id ?? (await fleet.createProject(CLI, { companyId }, 'local')).id;
  const [code] = await fleet.createCodes(CLI, projectId, {
    count: 1,
    ttlSeconds: 300,
    deviceName: 'local edge',
  });
  const url = manager.url.replace('localhost', '127.0.0.1');
  const { tx } = await dm.proposeManager(url);
  await dm.confirm(tx);
  const enrolled = await dm.activate(code!.code, 'local edge');
  return enrolled.deviceId;
}

/** `manager token create|list|revoke|rotate`. */
function tokenCommands(manager: Command): void {
  const tokens = manager.command('token').description('long-lived API tokens (X-AuthToken)');
  const tcreate = storeCommand(tokens, 'create', 'create a token; prints JSON with `token` (shown once)')
    .requiredOption('--name <name>', 'a name for people')
    .addOption(
      new Option('--role <role>', 'global role of the token').choices([...MANAGER_ROLES]).default('admin'),
    )
    .option('--user <username>', "the token acts with this user's roles instead of a role of its own")
    .action(() =>
      withStores(
        tcreate,
        ({ auth }) => {
          const o = tcreate.opts<{ name: string; role: 'admin'; user?: string }>();
          return auth.createToken(o.name, o.role, o.user);
        },
        {
          module: 'admin',
          action: 'api-tokens.create',
          // As the admin API records it: the name given (the id is in the answer).
          target: () => `name=${tcreate.opts<{ name: string }>().name}`,
          details: tcreate.opts(),
        },
      ),
    );
  const tlist = storeCommand(tokens, 'list', 'list the tokens (never their secrets)').action(() =>
    withStores(tlist, ({ auth }) => auth.listTokens(defaultListSpec())),
  );
  const trevoke = storeCommand(tokens, 'revoke', 'revoke a token')
    .requiredOption('--id <id>', 'the token id')
    .action(() =>
      withStores(
        trevoke,
        async ({ auth }) => {
          await auth.revokeToken(trevoke.opts<{ id: string }>().id);
          return { revoked: trevoke.opts<{ id: string }>().id };
        },
        {
          module: 'admin',
          action: 'api-tokens.delete',
          target: () => `id=${trevoke.opts<{ id: string }>().id}`,
        },
      ),
    );
  const trotate = storeCommand(tokens, 'rotate', 'a new secret for a token; the old one stops working')
    .requiredOption('--id <id>', 'the token id')
    .action(() =>
      withStores(trotate, ({ auth }) => auth.rotateToken(trotate.opts<{ id: string }>().id), {
        module: 'admin',
        action: 'api-tokens.rotate',
        target: () => `id=${trotate.opts<{ id: string }>().id}`,
      }),
    );
}

/** `manager user create|grant`. */
function userCommands(manager: Command): void {
  const users = manager.command('user').description('console users and their roles');
  const ucreate = storeCommand(users, 'create', 'create a user')
    .requiredOption('--username <name>', 'the user name')
    .requiredOption('--password <password>', 'the password (at least 8 characters)')
    .action(() =>
      withStores(
        ucreate,
        ({ auth }) => {
          const o = ucreate.opts<{ username: string; password: string }>();
          return auth.createUser(o.username, o.password);
        },
        {
          module: 'admin',
          action: 'users.create',
          target: () => `username=${ucreate.opts<{ username: string }>().username}`,
        },
      ),
    );
  const ugrant = storeCommand(users, 'grant', 'grant a role, globally or on a company or project')
    .requiredOption('--username <name>', 'the user name')
    .addOption(new Option('--role <role>', 'the role').choices([...MANAGER_ROLES]).makeOptionMandatory())
    .option('--company-id <id>', 'scope: one company')
    .option('--project-id <id>', 'scope: one project')
    .action(() =>
      withStores(
        ugrant,
        ({ auth }) => {
          const o = ugrant.opts<{
            username: string;
            role: 'admin';
            companyId?: string;
            projectId?: string;
          }>();
          return auth.grant(o.username, o.role, { companyId: o.companyId, projectId: o.projectId });
        },
        {
          module: 'admin',
          action: 'user.project.roles.create',
          target: () => `username=${ugrant.opts<{ username: string }>().username}`,
          details: ugrant.opts(),
        },
      ),
    );
}

/** `manager company create`, `manager project create`, `manager activation-code create`. */
function fleetCommands(manager: Command): void {
  const company = manager.command('company').description('companies');
  const ccreate = storeCommand(company, 'create', 'create a company')
    .requiredOption('--name <name>', 'the company name')
    .action(() =>
      withStores(ccreate, ({ fleet }) => fleet.createCompany(CLI, ccreate.opts<{ name: string }>().name), {
        module: 'fleet',
        action: 'company.create',
        target: () => `companyName=${ccreate.opts<{ name: string }>().name}`,
      }),
    );
  const project = manager.command('project').description('projects');
  const pcreate = storeCommand(project, 'create', 'create a project in a company')
    .requiredOption('--company-name <name>', 'the company name')
    .requiredOption('--name <name>', 'the project name')
    .action(() =>
      withStores(
        pcreate,
        ({ fleet }) => {
          const o = pcreate.opts<{ companyName: string; name: string }>();
          return fleet.createProject(CLI, { companyName: o.companyName }, o.name);
        },
        {
          module: 'fleet',
          action: 'project.create',
          target: () => `name=${pcreate.opts<{ name: string }>().name}`,
          details: pcreate.opts(),
        },
      ),
    );
  const codes = manager.command('activation-code').description('activation codes for edges');
  const acreate = storeCommand(codes, 'create', 'create activation codes (single use, expiring)')
    .requiredOption('--project-id <id>', 'the project the edge joins')
    .option('--ttl <seconds>', 'lifetime in seconds', '86400')
    .option('--count <n>', 'how many', '1')
    .action(() =>
      withStores(
        acreate,
        ({ fleet }) => {
          const o = acreate.opts<{ projectId: string; ttl: string; count: string }>();
          return fleet.createCodes(CLI, o.projectId, { count: Number(o.count), ttlSeconds: Number(o.ttl) });
        },
        {
          module: 'fleet',
          action: 'activation.code.create',
          // The codes are credentials: the record names the project, not them.
          target: () => `projectId=${acreate.opts<{ projectId: string }>().projectId}`,
          projectId: acreate.opts<{ projectId: string }>().projectId,
          details: acreate.opts(),
        },
      ),
    );
}
