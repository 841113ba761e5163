/**
 * The edge feeds the unified namespace out of the box (`millwright up`): one MQTT integration
 * instance named `uns-feed`, from the local edge to the local UNS broker, authenticated by an
 * account made from a UNS activation token (so its rules allow `<prefix>/#` only), with one
 * subscription `devicehub.raw.>` → `<prefix>/{device}/{tag}`. Made once: when an instance of that
 * name exists (even disabled or edited by the user) nothing is done.
 */
import { hostname } from 'node:os';
import { MQTT_PROVIDER_ID } from './catalogue.js';
import type { InstanceView, IntegrationService } from './service.js';

export const UNS_FEED_NAME = 'uns-feed';

/** What the feed needs of the UNS (given by whoever composes the two services). */
export interface UnsFeedPeer {
  /** An activation token limited to `path`. */
  createActivation(path: string): Promise<string>;
  /** Redeems it: the MQTT account's credentials. */
  redeem(token: string): Promise<{ username: string; password: string }>;
  mqttHost: string;
  mqttPort: number;
}

/** The default prefix: `edge/<host name>`, the host name made a single topic level. */
export function defaultUnsPrefix(): string {
  return `edge/${hostname().replace(/[^A-Za-z0-9_.-]+/g, '-') || 'edge'}`;
}

export async function ensureUnsFeed(
  integrations: IntegrationService,
  peer: UnsFeedPeer,
  prefix = defaultUnsPrefix(),
): Promise<{
  created: boolean;
  instance: InstanceView;
  prefix: string;
  /** The feed's MQTT account, when made now (its password is not shown again). */
  account?: { username: string; password: string };
}> {
  const clean = prefix.replace(/^\/+|\/+$/g, '') || defaultUnsPrefix();
  const existing = await integrations.repo.getInstanceByName(UNS_FEED_NAME);
  if (existing)
    return { created: false, instance: await integrations.getInstance(existing.id), prefix: clean };
  const token = await peer.createActivation(clean);
  const account = await peer.redeem(token);
  const instance = await integrations.createInstance({
    Name: UNS_FEED_NAME,
    ProviderID: MQTT_PROVIDER_ID,
    Description: `every tag to the local unified namespace under ${clean}/<device>/<tag> (made by millwright up)`,
    Config: {
      host: peer.mqttHost,
      port: peer.mqttPort,
      protocolVersion: 4,
      username: account.username,
      password: account.password,
      clientId: `millwright-uns-feed-${clean.replace(/[^A-Za-z0-9]+/g, '-')}`.slice(0, 64),
      qos: 1,
    },
  });
  await integrations.createSubscription({
    InstanceID: instance.ID,
    IsLocalToRemote: true,
    LocalName: 'devicehub.raw.>',
    RemoteName: `${clean}/{device}/{tag}`,
    Description: 'every tag of every device',
  });
  return { created: true, instance, prefix: clean, account };
}
