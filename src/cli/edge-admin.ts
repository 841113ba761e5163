/**
 * `millwright edge api-client ...` and `millwright edge api-token ...`: credentials managed on the
 * data directory (or the configured database) directly, whether or not the edge is running.
 */
import { Command, Option } from 'commander';
import { EDGE_OPTIONS } from '../edge/option-specs.js';
import type { AuthRepository, AuthService } from '../edge/auth/index.js';
import type { AccessKeyService } from '../edge/datahub/index.js';
import { resolveOptions, addServiceOptions } from './options.js';

/**
 * The edge's stores, imported by a command's action only (they load the edge's modules: seconds
 * of CPU that the help and a usage error do not need).
 */
async function openStore(cmd: Command) {
  const values = resolveOptions(cmd, 'edge', STORE_OPTIONS);
  const { openEdgeStore } = await import('../edge/migration-list.js');
  return openEdgeStore({
    dataDir: values['data-dir'] as string,
    databaseUrl: values['database-url'] as string | undefined,
  });
}

const STORE_OPTIONS = EDGE_OPTIONS.filter((o) => o.name === 'data-dir' || o.name === 'database-url');

function storeCommand(parent: Command, name: string, description: string): Command {
  return addServiceOptions(parent.command(name).description(description), 'edge', STORE_OPTIONS);
}

async function withAuth<T>(
  cmd: Command,
  fn: (auth: AuthService, repo: AuthRepository) => Promise<T>,
): Promise<void> {
  const database = await openStore(cmd);
  try {
    const { AuthRepository, AuthService } = await import('../edge/auth/index.js');
    const { default: pino } = await import('pino');
    const repo = new AuthRepository(database);
    const auth = await AuthService.open(repo, { tokenTtl: 3600, logger: pino({ level: 'silent' }) });
    const out = await fn(auth, repo);
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await database.close();
  }
}

const roleOption = () =>
  new Option('--role <role>', 'admin (may change state) or viewer (read only)')
    .choices(['admin', 'viewer'])
    .default('admin');

export function edgeAdminCommands(edge: Command): void {
  const clients = edge
    .command('api-client')
    .description('OAuth 2.0 API clients of the edge (client credentials)');
  const create = storeCommand(
    clients,
    'create',
    'create a client; prints { client_id, client_secret } (the secret once)',
  )
    .requiredOption('--name <name>', 'a name for people')
    .addOption(roleOption())
    .action(() =>
      withAuth(create, async (auth) => {
        const { name, role } = create.opts<{ name: string; role: 'admin' | 'viewer' }>();
        const c = await auth.createClient(name, role);
        return { client_id: c.client_id, client_secret: c.client_secret, name: c.name, role: c.role };
      }),
    );
  const list = storeCommand(clients, 'list', 'list the clients (never their secrets)').action(() =>
    withAuth(list, async (_auth, repo) =>
      (await repo.clientListQuery().orderBy('created_at').execute()).map(
        (await import('../edge/auth/index.js')).clientView,
      ),
    ),
  );
  const del = storeCommand(clients, 'delete', 'delete a client; its tokens stop working')
    .requiredOption('--id <client_id>', 'the client_id')
    .action(() =>
      withAuth(del, async (auth) => {
        const { id } = del.opts<{ id: string }>();
        await auth.deleteClient(id);
        return { deleted: id };
      }),
    );
  const rotate = storeCommand(clients, 'rotate-secret', 'give a client a new secret; prints it once')
    .requiredOption('--id <client_id>', 'the client_id')
    .action(() =>
      withAuth(rotate, async (auth) => auth.rotateClientSecret(rotate.opts<{ id: string }>().id)),
    );

  const tokens = edge
    .command('api-token')
    .description('long-lived API tokens (legacy header: Authorization: Basic base64(<token>:))');
  const tcreate = storeCommand(tokens, 'create', 'create a token; prints it once')
    .requiredOption('--name <name>', 'a name for people')
    .addOption(roleOption())
    .action(() =>
      withAuth(tcreate, async (auth) => {
        const { name, role } = tcreate.opts<{ name: string; role: 'admin' | 'viewer' }>();
        return auth.createApiToken(name, role);
      }),
    );
  const tlist = storeCommand(tokens, 'list', 'list the tokens (never the tokens themselves)').action(() =>
    withAuth(tlist, async (_auth, repo) =>
      (await repo.tokenListQuery().orderBy('created_at').execute()).map(
        (await import('../edge/auth/index.js')).tokenView,
      ),
    ),
  );
  const revoke = storeCommand(tokens, 'revoke', 'revoke a token')
    .requiredOption('--id <id>', 'the token id')
    .action(() =>
      withAuth(revoke, async (auth) => {
        const { id } = revoke.opts<{ id: string }>();
        await auth.revokeApiToken(id);
        return { revoked: id };
      }),
    );
  datahubAccessKeyCommands(edge);

  const admin = edge.command('admin').description('the local admin user (the first-run login)');
  const reset = storeCommand(
    admin,
    'reset-password',
    'give the admin a new one-time password, printed once; the next login must accept the EULA (if not yet) and change it',
  ).action(() =>
    withAuth(reset, async (auth) => ({
      ...(await auth.resetAdminPassword()),
      next: 'POST /auth/v2/login with it, then PUT /auth/v2/password to choose your own',
    })),
  );
}

/** `millwright edge access-key create|list|revoke`: DataHub access keys for remote NATS clients. */
function datahubAccessKeyCommands(edge: Command): void {
  const withKeys = async <T>(cmd: Command, fn: (keys: AccessKeyService) => Promise<T>) => {
    const database = await openStore(cmd);
    try {
      const { AccessKeyService, DataHubRepository } = await import('../edge/datahub/index.js');
      const out = await fn(new AccessKeyService(new DataHubRepository(database.db)));
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    } finally {
      await database.close();
    }
  };
  const patterns = (v: string | undefined) =>
    v === undefined
      ? undefined
      : v
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean);
  const keys = edge
    .command('access-key')
    .description('DataHub access keys: the password of remote NATS clients (port --datahub-port)');
  const create = storeCommand(keys, 'create', 'create a key; prints it once')
    .requiredOption('--name <name>', 'a name for people')
    .option('--publish <patterns>', 'subjects it may publish to, comma-separated (default: any)')
    .option('--subscribe <patterns>', 'patterns it may subscribe to, comma-separated (default: any)')
    .action(() =>
      withKeys(create, async (k) => {
        const o = create.opts<{ name: string; publish?: string; subscribe?: string }>();
        return k.create({ name: o.name, publish: patterns(o.publish), subscribe: patterns(o.subscribe) });
      }),
    );
  const list = storeCommand(keys, 'list', 'list the keys (never the keys themselves)').action(() =>
    withKeys(list, async (k) =>
      (await k.repo.keyListQuery().orderBy('created_at').execute()).map(
        (await import('../edge/datahub/index.js')).accessKeyView,
      ),
    ),
  );
  const revoke = storeCommand(
    keys,
    'revoke',
    'revoke a key; a running edge closes its connections within seconds',
  )
    .requiredOption('--id <id>', 'the key id')
    .action(() =>
      withKeys(revoke, async (k) => {
        const { id } = revoke.opts<{ id: string }>();
        await k.revoke(id);
        return { revoked: id };
      }),
    );
}
