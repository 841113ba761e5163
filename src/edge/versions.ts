/**
 * The version probes that clients of the product family call (wire notes, "Addresses"): each
 * answers `{ version, millwright }`, where `version` is the edge API release line Millwright
 * implements. They need credentials like every data route. `/dm/host/info` describes the host.
 */
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { MILLWRIGHT_VERSION } from '../kernel/version.js';

/** The edge API release line served (contract part 9). */
export const EDGE_API_VERSION = '4.4.0';

export const VERSION_PROBES = [
  '/devicehub/version',
  '/cc/version',
  '/opcua/version',
  '/analytics/v2/version',
  '/apps/version',
  '/dm/version',
  '/logs/version',
  '/flows-manager/version',
] as const;

const VersionReply = Type.Object({ version: Type.String(), millwright: Type.String() });

export async function versionRoutes(app: FastifyInstance): Promise<void> {
  const body = { version: EDGE_API_VERSION, millwright: MILLWRIGHT_VERSION };
  for (const path of VERSION_PROBES) {
    app.get(path, { schema: { response: { 200: VersionReply } } }, async () => body);
  }
  app.get('/dm/host/info', async () => ({
    hostname: os.hostname(),
    os: os.type(),
    platform: os.platform(),
    release: os.release(),
    arch: os.arch(),
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    uptimeSeconds: Math.round(os.uptime()),
    version: EDGE_API_VERSION,
    millwright: MILLWRIGHT_VERSION,
  }));
}
