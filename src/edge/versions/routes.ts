/**
 * The version probes that clients of the product family call (wire notes, "Addresses"): each
 * answers `{ version, millwright }`, where `version` is the edge API release line Millwright
 * implements. They need credentials like every data route. `/dm/host/info` describes the host.
 */
import type { FastifyInstance } from 'fastify';
import { VersionReply } from './schemas.js';
import { hostInfo, VERSION_PROBES, versionReply } from './service.js';

export async function versionRoutes(app: FastifyInstance): Promise<void> {
  const body = versionReply();
  for (const path of VERSION_PROBES) {
    app.get(path, { schema: { response: { 200: VersionReply } } }, async () => body);
  }
  app.get('/dm/host/info', async () => hostInfo());
}
