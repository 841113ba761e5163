/** Thin translation between `/mqtt/gql` and the UNS's modules. */
import type { IResolvers } from 'mercurius';
import type { GraphqlContext } from '../../kernel/graphql.js';
import { badRequest, unauthorized } from '../../kernel/errors.js';
import type { Account, AccountService, ActivationView, RuleSpec } from '../accounts/index.js';
import type { UnsBroker } from '../broker/index.js';
import { REALM, type IdentityService, type UserRole, type UserView } from '../identity/index.js';
import type { Namespace, NamespaceService, TopicNode } from '../namespace/index.js';

export interface UnsGraphqlContext {
  accounts: AccountService;
  broker: UnsBroker;
  identity: IdentityService;
  namespaces: NamespaceService;
  /** Addresses shown by `broker` and in activation tokens. */
  addresses: { url: string; mqttPort: number | null; mqttsPort: number | null };
}

type Ctx = GraphqlContext & UnsGraphqlContext;
/** Arguments as schema.graphql declares them (GraphQL has checked them before a resolver runs). */
interface PageArgs {
  offset?: number | null;
  limit?: number | null;
  filter?: string | null;
}
type RuleArgs = { path: string; perm: string }[];

const iso = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString() : null);

function accountOut(a: Account) {
  return { ...a, createdAt: iso(a.createdAt), updatedAt: iso(a.updatedAt) };
}

function userOut(u: UserView) {
  return { ...u, createdAt: iso(u.createdAt), updatedAt: iso(u.updatedAt) };
}

function namespaceOut(n: Namespace) {
  return { ...n, createdAt: iso(n.createdAt), updatedAt: iso(n.updatedAt) };
}

function activationOut(a: ActivationView & { token?: string }, ctx: Ctx) {
  return {
    ...a,
    token: a.token ?? null,
    expiresAt: iso(a.expiresAt),
    usedAt: iso(a.usedAt),
    createdAt: iso(a.createdAt),
    redeemUrl: `${ctx.addresses.url}/mqtt/activate`,
  };
}

function page<T>(items: T[], total: number, offset: number, limit: number) {
  return { items, total, offset, limit };
}

/** `offset` and `limit` of a page: a negative one is refused (as the edge does); `limit` is capped at `max`. */
function clampPage(args: PageArgs, max = 1000): { offset: number; limit: number } {
  const offset = args.offset ?? 0;
  const limit = args.limit ?? 50;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw badRequest(`offset must be an integer of 0 or more, got ${JSON.stringify(offset)}`);
  }
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw badRequest(`limit must be an integer of 0 or more, got ${JSON.stringify(limit)}`);
  }
  return { offset, limit: Math.min(max, limit) };
}

const rulesOf = (rules: { path: string; perm: string }[] | null | undefined): RuleSpec[] =>
  (rules ?? []).map((r) => ({ path: r.path, perm: r.perm as RuleSpec['perm'] }));

export const resolvers: IResolvers<never, Ctx> = {
  Query: {
    account: (_r, args: { id?: string | null }, ctx) => {
      if (args.id === undefined || args.id === null) return ctx.accounts.list().items.map(accountOut);
      const a = ctx.accounts.get(String(args.id));
      return a ? [accountOut(a)] : [];
    },
    accounts: (_r, args: PageArgs, ctx) => {
      const { offset, limit } = clampPage(args);
      const res = ctx.accounts.list({ offset, limit, filter: args.filter ?? undefined });
      return page(res.items.map(accountOut), res.total, offset, limit);
    },
    me: async (_r, _a, ctx) => {
      const subject = ctx.auth?.subject;
      if (!subject?.startsWith('user:')) throw unauthorized();
      return userOut(await ctx.identity.getUser(subject.slice('user:'.length)));
    },
    users: async (_r, _a, ctx) => (await ctx.identity.listUsers()).map(userOut),
    realm: (_r, _a, ctx) => ({
      name: REALM,
      clientId: ctx.identity.clientId,
      tokenLifetimeMinutes: ctx.identity.tokenLifetime,
    }),
    namespaces: async (_r, _a, ctx) => (await ctx.namespaces.list()).map(namespaceOut),
    namespace: async (_r, args: { id: string }, ctx) => {
      const all = await ctx.namespaces.list();
      const n = all.find((x) => x.id === String(args.id));
      return n ? namespaceOut(n) : null;
    },
    topic: (_r, args: { path?: string | null }, ctx) =>
      ctx.namespaces.topics.get(String(args.path ?? '')) ?? null,
    topics: (_r, args: PageArgs & { parent?: string | null }, ctx) => {
      const parent = ctx.namespaces.topics.get(String(args.parent ?? ''));
      const { offset, limit } = clampPage({ offset: args.offset, limit: args.limit ?? 100 });
      if (!parent) return page([], 0, offset, limit);
      const res = ctx.namespaces.topics.children(parent, offset, limit, args.filter);
      return page(res.items, res.total, offset, limit);
    },
    activationTokens: async (_r, _a, ctx) =>
      (await ctx.accounts.listActivations()).map((a) => activationOut(a, ctx)),
    broker: (_r, _a, ctx) => ({
      connectedClients: ctx.broker.connectedClients,
      topics: ctx.namespaces.topics.size,
      mqttPort: ctx.addresses.mqttPort,
      mqttsPort: ctx.addresses.mqttsPort,
      websocketPath: '/mqtt',
      protocols: ['MQTT 3.1', 'MQTT 3.1.1', 'MQTT 5'],
      refusals: { ...ctx.broker.counters, topicsNotRecorded: ctx.namespaces.topics.dropped },
      shared: { ...ctx.broker.shared.counters },
    }),
  },
  Mutation: {
    createAccount: async (
      _r,
      args: {
        username: string;
        password: string;
        acType?: string | null;
        enabled?: boolean | null;
        rules?: RuleArgs | null;
      },
      ctx,
    ) =>
      accountOut(
        await ctx.accounts.create({
          username: args.username,
          password: args.password,
          acType: args.acType ?? undefined,
          enabled: args.enabled ?? true,
          rules: rulesOf(args.rules),
        }),
      ),
    deleteAccount: async (_r, args: { accountId: string }, ctx) => {
      await ctx.accounts.remove(String(args.accountId));
      return true;
    },
    enableAccount: async (_r, args: { accountId: string }, ctx) =>
      accountOut(await ctx.accounts.setEnabled(String(args.accountId), true)),
    disableAccount: async (_r, args: { accountId: string }, ctx) =>
      accountOut(await ctx.accounts.setEnabled(String(args.accountId), false)),
    setAccountPassword: async (_r, args: { accountId: string; password: string }, ctx) =>
      accountOut(await ctx.accounts.setPassword(String(args.accountId), args.password)),
    addAccountRules: async (_r, args: { accountId: string; rules: RuleArgs }, ctx) =>
      accountOut(await ctx.accounts.addRules(String(args.accountId), rulesOf(args.rules))),
    removeAccountRules: async (_r, args: { accountId: string; ruleIds: string[] }, ctx) =>
      accountOut(
        await ctx.accounts.removeRules(String(args.accountId), (args.ruleIds as string[]).map(String)),
      ),

    createUser: async (_r, args: { username: string; password: string; role?: string | null }, ctx) =>
      userOut(
        await ctx.identity.createUser(args.username, args.password, (args.role ?? 'operator') as UserRole),
      ),
    deleteUser: async (_r, args: { username: string }, ctx) => {
      await ctx.identity.deleteUser(args.username);
      return true;
    },
    setUserPassword: async (_r, args: { username: string; password: string }, ctx) =>
      userOut(await ctx.identity.setPassword(args.username, args.password)),
    setRealmPolicy: async (_r, args: { tokenLifetimeMinutes: number }, ctx) => {
      await ctx.identity.setTokenLifetime(args.tokenLifetimeMinutes);
      return {
        name: REALM,
        clientId: ctx.identity.clientId,
        tokenLifetimeMinutes: ctx.identity.tokenLifetime,
      };
    },

    createNamespace: async (
      _r,
      args: { prefix: string; description?: string | null; defaultRules?: RuleArgs | null },
      ctx,
    ) =>
      namespaceOut(
        await ctx.namespaces.create({
          prefix: args.prefix,
          description: args.description,
          defaultRules: args.defaultRules ? rulesOf(args.defaultRules) : null,
        }),
      ),
    updateNamespace: async (
      _r,
      args: { id: string; description?: string | null; defaultRules?: RuleArgs | null },
      ctx,
    ) =>
      namespaceOut(
        await ctx.namespaces.update(String(args.id), {
          description: args.description,
          defaultRules: args.defaultRules ? rulesOf(args.defaultRules) : null,
        }),
      ),
    deleteNamespace: async (_r, args: { id: string }, ctx) => {
      await ctx.namespaces.remove(String(args.id));
      return true;
    },
    declareTopic: (_r, args: { path: string; description?: string | null }, ctx) =>
      ctx.namespaces.declareTopic(args.path, args.description ?? null),
    undeclareTopic: async (_r, args: { path: string }, ctx) => {
      await ctx.namespaces.undeclareTopic(args.path);
      return true;
    },

    createActivationToken: async (
      _r,
      args: { path: string; description?: string | null; ttlMinutes?: number | null },
      ctx,
    ) =>
      activationOut(
        await ctx.accounts.createActivation({
          path: args.path,
          description: args.description ?? undefined,
          ttlMinutes: args.ttlMinutes ?? undefined,
        }),
        ctx,
      ),
    revokeActivationToken: async (_r, args: { id: string }, ctx) => {
      await ctx.accounts.revokeActivation(String(args.id));
      return true;
    },
  },
  Account: {
    clients: (a: Account, _args, ctx) =>
      ctx.broker.clientsOf(a.id).map((c) => ({ ...c, lastSeen: iso(c.lastSeen) })),
  },
  Namespace: {
    topic: (n: Namespace, _args, ctx) => ctx.namespaces.topics.get(n.prefix) ?? null,
  },
  Topic: {
    description: (t: TopicNode) => t.description,
    lastValue: (t: TopicNode) => (t.lastValue ? t.lastValue.toString('utf8') : null),
    lastPublish: (t: TopicNode) => iso(t.lastPublish),
    messageCount: (t: TopicNode) => t.count,
    messageRate: (t: TopicNode, _args, ctx) => ctx.namespaces.topics.rate(t),
    childCount: (t: TopicNode) => t.children.size,
    children: (t: TopicNode, args: PageArgs, ctx) => {
      const { offset, limit } = clampPage({ offset: args.offset, limit: args.limit ?? 100 });
      const res = ctx.namespaces.topics.children(t, offset, limit, args.filter);
      return page(res.items, res.total, offset, limit);
    },
  },
};
