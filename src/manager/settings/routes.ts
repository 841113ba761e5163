/**
 * HTTP translation of the instance settings, on the admin console API (a global admin):
 * `/admin/v1/licenses2/type`, `/wg/instance-mode`, `/settings/mqtt-ssl-certificate`,
 * and `/domain/ssl/user/enable` (marketplace secrets, `/mpc-secrets/{key}`, are the marketplace
 * module's).
 */
import type { FastifyInstance } from 'fastify';
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
}
