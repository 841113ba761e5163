/**
 * `millwright uns user ...`, `millwright uns account ...` and `millwright uns activation ...`:
 * users of the service, MQTT accounts with their rules, and activation tokens, managed on the data
 * directory (or the configured database) directly, whether or not the UNS is running. A running
 * UNS notices account changes within a second and applies them to live connections.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { didYouMean } from './hints.js';
import { UNS_OPTIONS } from '../uns/option-specs.js';
import type { AccountService, Perm, RuleSpec } from '../uns/accounts/index.js';
import type { IdentityService, UserRole } from '../uns/identity/index.js';
// The words of --rule and --role, from the modules' files that hold them (no module loaded:
// test/module-shape.test.ts says why these two are allowed).
import { PERMS } from '../uns/accounts/rules.js';
import { USER_ROLES } from '../uns/identity/roles.js';
import { resolveOptions, addServiceOptions } from './options.js';
import { randomPassword } from '../kernel/crypto.js';

const STORE_OPTIONS = UNS_OPTIONS.filter((o) => o.name === 'data-dir' || o.name === 'database-url');

function storeCommand(parent: Command, name: string, description: string): Command {
  return addServiceOptions(parent.command(name).description(description), 'uns', STORE_OPTIONS);
}

interface Stores {
  identity: IdentityService;
  accounts: AccountService;
}

async function withStores<T>(cmd: Command, fn: (stores: Stores) => Promise<T>): Promise<void> {
  const values = resolveOptions(cmd, 'uns', STORE_OPTIONS);
  // The UNS's stores are imported here, by a command's action: not for the help or a usage error.
  const { openUnsStore } = await import('../uns/migration-list.js');
  const database = await openUnsStore({
    dataDir: values['data-dir'] as string,
    databaseUrl: values['database-url'] as string | undefined,
  });
  try {
    const { AccountRepository, AccountService } = await import('../uns/accounts/index.js');
    const { IdentityRepository, IdentityService } = await import('../uns/identity/index.js');
    const { default: pino } = await import('pino');
    const logger = pino({ level: 'silent' });
    const identity = await IdentityService.open(new IdentityRepository(database.db), {
      clientId: 'ide-ui',
      tokenLifetime: 30,
      logger,
    });
    const accounts = new AccountService(new AccountRepository(database.db), logger);
    await accounts.refresh();
    const out = await fn({ identity, accounts });
    process.stdout.write(`${JSON.stringify(out, isoDates, 2)}\n`);
  } finally {
    await database.close();
  }
}

/** Times as the UNS API prints them (ISO 8601), not the stores' epoch milliseconds. */
function isoDates(key: string, value: unknown): unknown {
  return key.endsWith('At') && typeof value === 'number' ? new Date(value).toISOString() : value;
}

/** `--rule 'plant/#:PubSub'` (repeatable): a topic filter and a permission. */
function parseRule(value: string, previous: RuleSpec[] = []): RuleSpec[] {
  const i = value.lastIndexOf(':');
  const path = i > 0 ? value.slice(0, i) : '';
  const perm = i > 0 ? value.slice(i + 1) : '';
  if (!path || !PERMS.includes(perm as Perm)) {
    // The words people try for a permission, and typos of the real ones.
    const words: Record<string, Perm> = {
      write: 'Pub',
      publish: 'Pub',
      read: 'Sub',
      subscribe: 'Sub',
      readwrite: 'PubSub',
      all: 'PubSub',
    };
    const guess = words[perm.toLowerCase()] ?? didYouMean(perm, PERMS);
    throw new InvalidArgumentError(
      `--rule takes FILTER:PERM with PERM one of ${PERMS.join(', ')}, got "${value}"${path && guess ? ` (did you mean "${path}:${guess}"?)` : ''}`,
    );
  }
  return [...previous, { path, perm: perm as Perm }];
}

export function unsAdminCommands(uns: Command): void {
  userCommands(uns);
  accountCommands(uns);
}

/** `uns user ...` and `uns admin ...`: the people who sign in. */
function userCommands(uns: Command): void {
  const users = uns
    .command('user')
    .description('users of the service (administrators and operators) who sign in to /mqtt/gql');
  const ucreate = storeCommand(users, 'create', 'create a user')
    .requiredOption('--username <name>', 'the user name')
    .requiredOption('--password <password>', 'the password (at least 8 characters)')
    .addOption(
      new Option('--role <role>', 'admin (may change) or operator (reads)')
        .choices([...USER_ROLES])
        .default('admin'),
    )
    .action(() =>
      withStores(ucreate, async ({ identity }) => {
        const o = ucreate.opts<{ username: string; password: string; role: UserRole }>();
        return identity.createUser(o.username, o.password, o.role);
      }),
    );
  const ulist = storeCommand(users, 'list', 'list the users').action(() =>
    withStores(ulist, ({ identity }) => identity.listUsers()),
  );
  const udelete = storeCommand(users, 'delete', 'delete a user; its tokens stop working')
    .requiredOption('--username <name>', 'the user name')
    .action(() =>
      withStores(udelete, async ({ identity }) => {
        const { username } = udelete.opts<{ username: string }>();
        await identity.deleteUser(username);
        return { deleted: username };
      }),
    );
  const upass = storeCommand(users, 'set-password', "set a user's password; its older tokens stop working")
    .requiredOption('--username <name>', 'the user name')
    .requiredOption('--password <password>', 'the new password')
    .action(() =>
      withStores(upass, async ({ identity }) => {
        const o = upass.opts<{ username: string; password: string }>();
        return identity.setPassword(o.username, o.password);
      }),
    );

  const admin = uns.command('admin').description('the administrator created on first start');
  const reset = storeCommand(
    admin,
    'reset-password',
    'give the administrator "admin" a new one-time password, printed once; its older tokens stop working',
  ).action(() =>
    withStores(reset, async ({ identity }) => {
      const password = randomPassword();
      const users = await identity.listUsers();
      if (users.some((u) => u.username === 'admin')) await identity.setPassword('admin', password);
      else await identity.createUser('admin', password, 'admin');
      return {
        username: 'admin',
        password,
        next: 'sign in with it (password grant), then change it: millwright uns user set-password',
      };
    }),
  );
}

/** `uns account ...` and `uns activation ...`: MQTT accounts and the tokens that make them. */
function accountCommands(uns: Command): void {
  const accounts = uns.command('account').description('MQTT accounts and their rules');
  const acreate = storeCommand(accounts, 'create', 'create an MQTT account')
    .requiredOption('--username <name>', 'the MQTT user name')
    .requiredOption('--password <password>', 'the MQTT password (at least 8 characters)')
    .option('--rule <filter:perm>', 'a rule, e.g. "plant/#:PubSub" (repeatable)', parseRule)
    .option('--disabled', 'create it disabled')
    .action(() =>
      withStores(acreate, async ({ accounts: svc }) => {
        const o = acreate.opts<{
          username: string;
          password: string;
          rule?: RuleSpec[];
          disabled?: boolean;
        }>();
        return svc.create({
          username: o.username,
          password: o.password,
          rules: o.rule ?? [],
          enabled: !o.disabled,
        });
      }),
    );
  const alist = storeCommand(accounts, 'list', 'list the accounts and their rules').action(() =>
    withStores(alist, async ({ accounts: svc }) => svc.list().items),
  );
  const arule = storeCommand(accounts, 'add-rule', 'add rules to an account')
    .requiredOption('--id <id>', 'the account id')
    .requiredOption('--rule <filter:perm>', 'a rule, e.g. "plant/#:PubSub" (repeatable)', parseRule)
    .action(() =>
      withStores(arule, async ({ accounts: svc }) => {
        const o = arule.opts<{ id: string; rule: RuleSpec[] }>();
        return svc.addRules(o.id, o.rule);
      }),
    );
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    const cmd = storeCommand(accounts, name, `${name} an account (disabling closes its live connections)`)
      .requiredOption('--id <id>', 'the account id')
      .action(() =>
        withStores(cmd, ({ accounts: svc }) => svc.setEnabled(cmd.opts<{ id: string }>().id, enabled)),
      );
  }
  const adelete = storeCommand(accounts, 'delete', 'delete an account (closes its live connections)')
    .requiredOption('--id <id>', 'the account id')
    .action(() =>
      withStores(adelete, async ({ accounts: svc }) => {
        const { id } = adelete.opts<{ id: string }>();
        await svc.remove(id);
        return { deleted: id };
      }),
    );

  const activations = uns
    .command('activation')
    .description('activation tokens that give an edge service its MQTT credentials');
  const tcreate = storeCommand(
    activations,
    'create',
    'create a token for a part of the namespace; prints it once',
  )
    .requiredOption('--path <prefix>', 'the topic prefix the edge may publish and subscribe under')
    .option('--ttl-minutes <n>', 'minutes until it expires', (v) => Number(v), 1440)
    .action(() =>
      withStores(tcreate, async ({ accounts: svc }) => {
        const o = tcreate.opts<{ path: string; ttlMinutes: number }>();
        return svc.createActivation({ path: o.path, ttlMinutes: o.ttlMinutes });
      }),
    );
}
