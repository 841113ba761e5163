/**
 * The operations the console needs beyond the management API: the rule tester (the broker's own
 * checks), the connected clients and their disconnect, the broker's metrics and a test publish.
 * Inputs are `<Operation>Request` objects.
 */
import type { IResolvers } from 'mercurius';
import type { GraphqlContext } from '../../kernel/graphql.js';
import { badRequest, notFound } from '../../kernel/errors.js';
import {
  brokerMetrics,
  disconnectClient,
  listConnections,
  publishProblem,
  ruleVerdict,
  type RuleAction,
} from '../broker/index.js';
import type { UnsGraphqlContext } from './resolvers.js';

type Ctx = GraphqlContext & UnsGraphqlContext;

interface TestRuleRequest {
  accountId?: string | null;
  username?: string | null;
  action: RuleAction;
  topic: string;
}

interface ConnectionsRequest {
  offset?: number | null;
  limit?: number | null;
  filter?: string | null;
}

interface PublishMessageRequest {
  topic: string;
  payload: string;
  qos?: number | null;
  retain?: boolean | null;
}

/** Connections listed a page at most. */
const MAX_CONNECTIONS_PAGE = 500;

function accountIdOf(ctx: Ctx, request: TestRuleRequest): string {
  if (request.accountId) return String(request.accountId);
  if (!request.username) throw badRequest('testRule needs accountId or username');
  const account = ctx.accounts.byUsername(request.username);
  if (!account) throw notFound(`no account with the user name "${request.username}"`);
  return account.id;
}

export const consoleResolvers: IResolvers<never, Ctx> = {
  Query: {
    testRule: (_r, args: { request: TestRuleRequest }, ctx) => {
      const { request } = args;
      const id = accountIdOf(ctx, request);
      const verdict = ruleVerdict(ctx.accounts, ctx.broker.limits, id, request.action, request.topic);
      if (!verdict) throw notFound(`no account ${id}`);
      return { ...verdict, account: ctx.accounts.get(id) };
    },
    connections: (_r, args: { request?: ConnectionsRequest | null }, ctx) => {
      const offset = args.request?.offset ?? 0;
      const limit = args.request?.limit ?? 50;
      if (!Number.isSafeInteger(offset) || offset < 0) throw badRequest('offset must be 0 or more');
      if (!Number.isSafeInteger(limit) || limit < 0) throw badRequest('limit must be 0 or more');
      const page = { offset, limit: Math.min(limit, MAX_CONNECTIONS_PAGE), filter: args.request?.filter };
      const res = listConnections(ctx.broker, ctx.accounts, page);
      return { ...res, offset, limit: page.limit };
    },
    brokerMetrics: (_r, _a, ctx) => brokerMetrics(ctx.broker),
  },
  Mutation: {
    publishMessage: async (_r, args: { request: PublishMessageRequest }, ctx) => {
      const { topic, payload } = args.request;
      const qos = args.request.qos ?? 0;
      const retain = args.request.retain ?? false;
      if (qos !== 0 && qos !== 1 && qos !== 2) throw badRequest(`qos must be 0, 1 or 2, got ${qos}`);
      if (topic === '' || /[+#]/.test(topic)) {
        throw badRequest('topic must not be empty and must have no wildcard (+, #)');
      }
      if (topic.startsWith('$')) throw badRequest('topic must not start with $ (reserved by the broker)');
      const body = Buffer.from(payload, 'utf8');
      const max = ctx.broker.limits.maxPacketSize - Buffer.byteLength(topic) - 16;
      if (body.length > max)
        throw badRequest(`payload has ${body.length} bytes; at most ${max} (--max-packet-size)`);
      const problem = publishProblem(topic, ctx.broker.limits);
      if (problem) throw badRequest(problem);
      await ctx.broker.publish(topic, body, { qos, retain });
      // Messages of the broker itself are not seen by the publish hook: recorded here.
      ctx.broker.meter.mark();
      ctx.namespaces.topics.record(topic, body, retain, Date.now());
      return { topic, bytes: body.length, retain };
    },
    disconnectClient: (_r, args: { request: { clientId: string } }, ctx) =>
      disconnectClient(ctx.broker, args.request.clientId),
  },
};
