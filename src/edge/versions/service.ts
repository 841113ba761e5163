/** The edge API release line served, the paths that report it, and the host's description. */
import os from 'node:os';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import { hostFacts } from '../../kernel/host.js';

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

/** What every version probe answers. */
export function versionReply(): { version: string; millwright: string } {
  return { version: EDGE_API_VERSION, millwright: MILLWRIGHT_VERSION };
}

/** `/dm/host/info`: the host as the link describes it to the manager, its uptime and the versions served. */
export function hostInfo(): Record<string, unknown> {
  return {
    ...hostFacts(),
    uptimeSeconds: Math.round(os.uptime()),
    version: EDGE_API_VERSION,
    millwright: MILLWRIGHT_VERSION,
  };
}
