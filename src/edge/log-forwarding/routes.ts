/** HTTP translation of log forwarding: `/dm/v2/log-forwarding/{config,status,start,stop}`. */
import type { FastifyInstance } from 'fastify';
import type { ForwardingConfig } from './config.js';
import { ConfigBody, StatusReply } from './schemas.js';
import { withDefaults, type LogForwardingService } from './service.js';

export async function logForwardingRoutes(
  app: FastifyInstance,
  options: { forwarding: LogForwardingService },
) {
  const { forwarding } = options;
  app.get('/dm/v2/log-forwarding/config', async () => forwarding.config());
  app.put<{ Body: ConfigBody }>(
    '/dm/v2/log-forwarding/config',
    { schema: { body: ConfigBody } },
    async (request) => forwarding.setConfig(withDefaults(request.body as Partial<ForwardingConfig>)),
  );
  app.get('/dm/v2/log-forwarding/status', { schema: { response: { 200: StatusReply } } }, async () =>
    forwarding.status(),
  );
  app.post('/dm/v2/log-forwarding/start', { schema: { response: { 200: StatusReply } } }, async () =>
    forwarding.start(),
  );
  app.post('/dm/v2/log-forwarding/stop', { schema: { response: { 200: StatusReply } } }, async () =>
    forwarding.stop(),
  );
}
