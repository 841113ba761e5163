/** `millwright up`: the edge's UNS feed, wired to the UNS of the same process (see src/edge/integrations/uns-feed.ts). */
import type { EdgeConfig } from '../edge/service.js';
import type { EdgeService } from '../edge/service.js';
import { ensureUnsFeed } from '../edge/integrations/index.js';
import type { UnsService } from '../uns/service.js';

/** Makes the feed once (unless MILLWRIGHT_EDGE_UNS_FEED=false); answers lines for the banner, or null. */
export async function startUnsFeed(
  edge: EdgeService,
  uns: UnsService,
  config: EdgeConfig,
): Promise<string | null> {
  if (!config.unsFeed) return null;
  const port = Number(new URL(uns.mqttUrl).port);
  let feed: Awaited<ReturnType<typeof ensureUnsFeed>>;
  try {
    feed = await ensureUnsFeed(
      edge.shell.module('integrations'),
      {
        createActivation: async (path) =>
          (
            await uns.accounts.createActivation({
              path,
              description: 'edge UNS feed (millwright up)',
              ttlMinutes: 5,
            })
          ).token,
        redeem: async (token) => {
          const r = await uns.accounts.redeemActivation(token, () => []);
          return { username: r.account.username, password: r.password };
        },
        mqttHost: '127.0.0.1',
        mqttPort: port,
      },
      config.unsFeedPrefix,
    );
  } catch (err) {
    return `  UNS feed       not made: ${err instanceof Error ? err.message : String(err)}`;
  }
  const lines = [
    `  UNS feed       every tag on ${feed.prefix}/<device>/<tag> (integration "uns-feed"${feed.created ? ', made now' : ''}; MILLWRIGHT_EDGE_UNS_FEED=false to skip)`,
  ];
  if (feed.account) {
    lines.push(
      `    watch it: mosquitto_sub -h 127.0.0.1 -p ${port} -u '${feed.account.username}' -P '${feed.account.password}' -t '${feed.prefix}/#' -v  (shown once)`,
    );
  }
  return lines.join('\n');
}
