/** HTTP translation of activation: an edge redeems its token for MQTT credentials (public, rate limited). */
import type { FastifyInstance } from 'fastify';
import { RateLimiter } from '../../kernel/http/rate-limit.js';
import { ActivateBody } from './schemas.js';
import type { AccountService } from './service.js';
import type { RuleSpec } from './rules.js';

export interface ActivationRoutesOptions {
  accounts: AccountService;
  /** Rules the new account gets besides `<path>/#` (its namespaces' default rules). */
  defaultRules: (path: string) => Promise<RuleSpec[]>;
  /** Where the edge connects, known once the service listens. */
  addresses: { url: string; mqttPort: number | null; mqttsPort: number | null };
  /** Attempts per minute per client address. */
  rateLimit: number;
}

export async function activationRoutes(
  app: FastifyInstance,
  options: ActivationRoutesOptions,
): Promise<void> {
  const { accounts, addresses } = options;
  const limited = new RateLimiter({ max: options.rateLimit, windowMs: 60_000 }).hook();
  app.post<{ Body: ActivateBody }>(
    '/mqtt/activate',
    { config: { permission: 'public' }, onRequest: limited, schema: { body: ActivateBody } },
    async (request) => {
      const { account, password, path } = await accounts.activate(request.body.token, options.defaultRules);
      return {
        accountId: account.id,
        username: account.username,
        password,
        path,
        rules: account.rules,
        mqtt: {
          port: addresses.mqttPort,
          tlsPort: addresses.mqttsPort,
          websocket: `${addresses.url.replace(/^http/, 'ws')}/mqtt`,
        },
      };
    },
  );
}
