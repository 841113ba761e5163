/**
 * How the CLI commands that talk to a running edge find it and sign in: `--url` (or
 * MILLWRIGHT_EDGE_URL, default https://localhost:8443), an API client (`--client-id` and
 * `--client-secret`, or MILLWRIGHT_EDGE_CLIENT_ID and MILLWRIGHT_EDGE_CLIENT_SECRET), and the
 * edge's certificate (`--ca FILE`, e.g. `<data-dir>/tls/server.crt`, or `--insecure`).
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { EdgeClient } from '../client/index.js';
import { ConfigError } from '../kernel/config.js';

export interface EdgeClientFlags {
  url?: string;
  natsUrl?: string;
  clientId?: string;
  clientSecret?: string;
  ca?: string;
  insecure?: boolean;
}

export function addEdgeClientOptions(cmd: Command, { credentials = true } = {}): Command {
  cmd.addOption(
    new Option('--url <url>', 'the edge [MILLWRIGHT_EDGE_URL]').default(
      process.env.MILLWRIGHT_EDGE_URL ?? 'https://localhost:8443',
      'https://localhost:8443',
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
      "PEM certificate to trust (the edge's <data-dir>/tls/server.crt) [MILLWRIGHT_EDGE_CA]",
    ),
  );
  cmd.addOption(new Option('--insecure', 'accept any certificate (the self-signed one of a test edge)'));
  return cmd;
}

export function edgeClientFrom(flags: EdgeClientFlags, { credentials = true } = {}): EdgeClient {
  const clientId = flags.clientId ?? process.env.MILLWRIGHT_EDGE_CLIENT_ID;
  const clientSecret = flags.clientSecret ?? process.env.MILLWRIGHT_EDGE_CLIENT_SECRET;
  if (credentials && (!clientId || !clientSecret)) {
    throw new ConfigError(
      'this command needs an API client: --client-id and --client-secret (or MILLWRIGHT_EDGE_CLIENT_ID and MILLWRIGHT_EDGE_CLIENT_SECRET); create one with `millwright edge api-client create --name NAME`',
    );
  }
  return new EdgeClient({
    url: flags.url ?? 'https://localhost:8443',
    ...(flags.natsUrl ? { natsUrl: flags.natsUrl } : {}),
    ...(credentials && clientId && clientSecret ? { credentials: { clientId, clientSecret } } : {}),
    ...((flags.ca ?? process.env.MILLWRIGHT_EDGE_CA)
      ? { ca: readFileSync(flags.ca ?? process.env.MILLWRIGHT_EDGE_CA!) }
      : {}),
    ...(flags.insecure ? { insecure: true } : {}),
  });
}
