/**
 * How the CLI commands that talk to a running edge find it and sign in: `--url` (or
 * MILLWRIGHT_EDGE_URL; without either, the address the running edge wrote in its data directory,
 * src/cli/discover.ts, else https://localhost:8443), an API client (`--client-id` and
 * `--client-secret`, or MILLWRIGHT_EDGE_CLIENT_ID and MILLWRIGHT_EDGE_CLIENT_SECRET), and the
 * edge's certificate (`--ca FILE` or MILLWRIGHT_EDGE_CA, `--insecure`; for an edge found in its
 * data directory, that directory's tls/server.crt).
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import type { NatsConnection } from 'nats';
import { EdgeClient } from '../client/edge.js';
import { ConfigError } from '../kernel/config.js';
import { discover } from './discover.js';

export interface EdgeClientFlags {
  url?: string;
  natsUrl?: string;
  dataDir?: string;
  clientId?: string;
  clientSecret?: string;
  ca?: string;
  insecure?: boolean;
}

export function addEdgeClientOptions(cmd: Command, { credentials = true } = {}): Command {
  cmd.addOption(
    new Option(
      '--url <url>',
      'the edge (default: the running edge of --data-dir, else https://localhost:8443) [MILLWRIGHT_EDGE_URL]',
    ),
  );
  cmd.addOption(
    new Option(
      '--data-dir <dir>',
      "the edge's data directory, where a running edge (or `up`) writes its addresses (default: ~/.millwright/edge) [MILLWRIGHT_EDGE_DATA_DIR]",
    ),
  );
  if (credentials) {
    cmd.addOption(
      new Option(
        '--client-id <id>',
        'API client (millwright edge api-client create) [MILLWRIGHT_EDGE_CLIENT_ID]',
      ),
    );
    cmd.addOption(new Option('--client-secret <secret>', 'its secret [MILLWRIGHT_EDGE_CLIENT_SECRET]'));
  }
  cmd.addOption(
    new Option(
      '--ca <file>',
      'PEM certificate to trust (default for an edge found in --data-dir: its tls/server.crt) [MILLWRIGHT_EDGE_CA]',
    ),
  );
  cmd.addOption(new Option('--insecure', 'accept any certificate (the self-signed one of a test edge)'));
  return cmd;
}

/** The edge's addresses: the flags, their variables, the running edge's record, the defaults. */
export function edgeAddresses(flags: EdgeClientFlags): {
  url: string;
  natsUrl: string | undefined;
  /** Whether the DataHub address is the user's (a flag or its variable) or a running edge's. */
  natsKnown: boolean;
  ca: string | undefined;
} {
  const chosenUrl = flags.url ?? process.env.MILLWRIGHT_EDGE_URL;
  const chosenNats = flags.natsUrl ?? process.env.MILLWRIGHT_EDGE_NATS_URL;
  const found = discover('edge', flags.dataDir);
  const running = found.service;
  // The record holds for the URL the user gave too, when it is the running edge's.
  const useRecord = running !== null && (chosenUrl === undefined || sameOrigin(chosenUrl, running.url));
  const ca =
    flags.ca ?? process.env.MILLWRIGHT_EDGE_CA ?? (useRecord && !flags.insecure ? found.ca : undefined);
  return {
    url: chosenUrl ?? running?.url ?? 'https://localhost:8443',
    natsUrl: chosenNats ?? (useRecord ? running.natsUrl : undefined),
    natsKnown: chosenNats !== undefined || useRecord,
    ca,
  };
}

function sameOrigin(a: string, b: string): boolean {
  try {
    const [x, y] = [new URL(a), new URL(b)];
    const local = (h: string) => (h === '127.0.0.1' || h === '[::1]' ? 'localhost' : h);
    return x.protocol === y.protocol && x.port === y.port && local(x.hostname) === local(y.hostname);
  } catch {
    return false;
  }
}

export function edgeClientFrom(flags: EdgeClientFlags, { credentials = true } = {}): EdgeClient {
  const clientId = flags.clientId ?? process.env.MILLWRIGHT_EDGE_CLIENT_ID;
  const clientSecret = flags.clientSecret ?? process.env.MILLWRIGHT_EDGE_CLIENT_SECRET;
  if (credentials && (!clientId || !clientSecret)) {
    throw new ConfigError(
      'this command needs an API client: --client-id and --client-secret (or MILLWRIGHT_EDGE_CLIENT_ID and MILLWRIGHT_EDGE_CLIENT_SECRET); create one with `millwright edge api-client create --name NAME`',
    );
  }
  const at = edgeAddresses(flags);
  return new EdgeClient({
    url: at.url,
    ...(at.natsUrl ? { natsUrl: at.natsUrl } : {}),
    ...(credentials && clientId && clientSecret ? { credentials: { clientId, clientSecret } } : {}),
    ...(at.ca ? { ca: readCa(at.ca) } : {}),
    ...(flags.insecure ? { insecure: true } : {}),
  });
}

function readCa(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(
      `--ca ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
}

/**
 * The DataHub of the edge, over NATS. A DataHub address the user did not choose (the default, or
 * the record's) must be an edge's: a NATS server that is not one (the machine's own nats-server on
 * 4222) is refused plainly instead of watched silently.
 */
export async function edgeNats(
  flags: EdgeClientFlags,
  accessKey: string | undefined,
): Promise<{
  client: EdgeClient;
  nc: NatsConnection;
}> {
  const client = edgeClientFrom(flags, { credentials: false });
  const nc = await client.nats(accessKey ? { accessKey } : {});
  const name = nc.info?.server_name ?? '';
  if (!edgeAddresses(flags).natsKnown && !name.startsWith('millwright')) {
    await nc.close();
    client.close();
    throw new ConfigError(
      `${client.natsUrl} is a NATS server but not a Millwright edge's DataHub (server "${name}"); no running edge was found in ${discover('edge', flags.dataDir).dataDir}: give the edge's data directory (--data-dir) or its DataHub (--nats-url, the "DataHub (NATS)" line of \`up\`)`,
    );
  }
  return { client, nc };
}
