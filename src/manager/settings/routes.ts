/**
 * HTTP translation of the instance settings, on the admin console API (a global admin):
 * `/admin/v1/licenses2/type`, `/wg/instance-mode`, `/settings/mqtt-ssl-certificate`,
 * `/domain/ssl/user/enable` and `/mpc-secrets/{key}`.
 */
import type { FastifyInstance } from 'fastify';
import { principalOf } from '../auth/index.js';
import * as S from './schemas.js';
import type { InstanceSettingsService } from './service.js';

export async function settingsRoutes(app: FastifyInstance, options: { settings: InstanceSettingsService }) {
  const { settings } = options;
  app.get('/admin/v1/licenses2/type', { schema: { response: { 200: S.LicenseReply } } }, () =>
    settings.license(),
  );
  app.get('/admin/v1/wg/instance-mode', () => settings.instanceMode());
  app.put<{ Body: S.ModeBody }>('/admin/v1/wg/instance-mode', { schema: { body: S.ModeBody } }, (request) =>
    settings.setInstanceMode(request.body.mode),
  );
  app.get('/admin/v1/settings/mqtt-ssl-certificate', () => settings.mqttCertificate());
  app.put<{ Body: S.KeyPairBody }>(
    '/admin/v1/settings/mqtt-ssl-certificate',
    { schema: { body: S.KeyPairBody } },
    (request) => settings.setMqttCertificate(request.body),
  );
  app.post<{ Body: S.KeyPairBody }>(
    '/admin/v1/domain/ssl/user/enable',
    { schema: { body: S.KeyPairBody } },
    async (request) => settings.enableUserSsl(request.body),
  );

  const secret = '/admin/v1/mpc-secrets/:key';
  app.get<{ Params: S.SecretParams }>(secret, { schema: { params: S.SecretParams } }, (request) =>
    settings.secret(request.params.key),
  );
  app.post<{ Params: S.SecretParams; Body: S.SecretBody }>(
    secret,
    { schema: { params: S.SecretParams, body: S.SecretBody } },
    async (request, reply) => {
      const r = await settings.putSecret(
        request.params.key,
        request.body.value,
        principalOf(request).subject,
      );
      return reply.status(r.created ? 201 : 200).send(r.body);
    },
  );
  app.delete<{ Params: S.SecretParams }>(
    secret,
    { schema: { params: S.SecretParams } },
    async (request, reply) => {
      await settings.deleteSecret(request.params.key);
      return reply.status(204).send();
    },
  );
}
