/**
 * `millwright edge config export|apply|snapshot`: configuration templates against a running edge,
 * through the typed client (`EdgeConfigClient`). The edge's address and an API client's
 * credentials come from flags or `MILLWRIGHT_EDGE_URL`, `MILLWRIGHT_EDGE_CLIENT_ID`,
 * `MILLWRIGHT_EDGE_CLIENT_SECRET`. A long apply shows one progress line on stderr.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { EdgeClient } from '../client/edge.js';
import { EdgeConfigClient } from '../client/edge-config.js';

interface Conn {
  url: string;
  clientId?: string;
  clientSecret?: string;
  insecure?: boolean;
}

function withConnection(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--url <url>', 'address of the running edge')
        .env('MILLWRIGHT_EDGE_URL')
        .default('https://localhost:8443'),
    )
    .addOption(new Option('--client-id <id>', 'API client id').env('MILLWRIGHT_EDGE_CLIENT_ID'))
    .addOption(
      new Option('--client-secret <secret>', 'API client secret').env('MILLWRIGHT_EDGE_CLIENT_SECRET'),
    )
    .addOption(new Option('--insecure', "accept the edge's self-signed certificate"));
}

async function run<T>(opts: Conn, fn: (c: EdgeConfigClient) => Promise<T>): Promise<T> {
  if (!opts.clientId || !opts.clientSecret)
    throw new Error(
      'give --client-id and --client-secret (or MILLWRIGHT_EDGE_CLIENT_ID and MILLWRIGHT_EDGE_CLIENT_SECRET)',
    );
  const edge = new EdgeClient({
    url: opts.url,
    credentials: { clientId: opts.clientId, clientSecret: opts.clientSecret },
    insecure: opts.insecure === true,
  });
  try {
    return await fn(new EdgeConfigClient(edge));
  } finally {
    edge.close();
  }
}

const print = (v: unknown): void => {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
};

/** One line on stderr, rewritten in place on a terminal. */
function progress(): { line: (text: string) => void; done: () => void } {
  const tty = process.stderr.isTTY;
  let last = '';
  return {
    line(text) {
      if (text === last) return;
      last = text;
      process.stderr.write(tty ? `\r${text}\u001b[K` : `${text}\n`);
    },
    done() {
      if (tty && last) process.stderr.write('\n');
    },
  };
}

export function edgeConfigCommands(edge: Command): void {
  const config = edge
    .command('config')
    .description('configuration templates and snapshots of a running edge');

  withConnection(config.command('export').description('the edge configuration as a template document'))
    .option('--encryption-key <key>', 'encrypt the secrets with this key (without it they are left out)')
    .option('-o, --out <file>', 'write to this file instead of stdout')
    .action(async (opts: Conn & { encryptionKey?: string; out?: string }) => {
      const doc = await run(opts, (c) => c.export(opts.encryptionKey));
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      if (opts.out) writeFileSync(opts.out, text);
      else process.stdout.write(text);
    });

  withConnection(config.command('apply').description('upload a template document and apply it'))
    .argument('<file>', 'the template document (JSON)')
    .addOption(
      new Option('--mode <mode>', 'legacy, use or merge-apply').choices(['legacy', 'use', 'merge-apply']),
    )
    .option('--encryption-key <key>', 'the key the template secrets are encrypted with')
    .option('--no-fail-fast', 'apply what can be applied and report the items that failed')
    .option('--name <name>', 'also save the template under this name')
    .option('--description <text>', 'description of the saved template')
    .option('--save-only', 'save the template (needs --name) without applying it')
    .action(
      async (
        file: string,
        opts: Conn & {
          mode?: 'legacy';
          encryptionKey?: string;
          failFast: boolean;
          name?: string;
          description?: string;
          saveOnly?: boolean;
        },
      ) => {
        const text = readFileSync(file, 'utf8');
        const bar = progress();
        const started = Date.now();
        let timer: NodeJS.Timeout | undefined;
        try {
          const result = await run(opts, (c) =>
            c.apply(text, {
              ...(opts.mode ? { mode: opts.mode } : {}),
              ...(opts.encryptionKey ? { encryptionKey: opts.encryptionKey } : {}),
              failFast: opts.failFast,
              ...(opts.name ? { name: opts.name } : {}),
              ...(opts.description ? { description: opts.description } : {}),
              ...(opts.saveOnly ? { saveOnly: true } : {}),
              onUpload: (sent, total) => {
                bar.line(`uploading ${(sent / 1048576).toFixed(1)} of ${(total / 1048576).toFixed(1)} MiB`);
                if (sent === total && !timer) {
                  const t0 = Date.now();
                  timer = setInterval(
                    () => bar.line(`applying... ${Math.round((Date.now() - t0) / 1000)} s`),
                    1000,
                  );
                }
              },
            }),
          );
          bar.line(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
          bar.done();
          print(result);
        } finally {
          clearInterval(timer);
        }
      },
    );

  const snapshot = config.command('snapshot').description('configuration snapshots');
  withConnection(snapshot.command('list').description('snapshots, most recent first')).action(
    async (opts: Conn) => print(await run(opts, (c) => c.snapshots())),
  );
  withConnection(snapshot.command('capture').description('capture a snapshot of the current configuration'))
    .option('--reason <text>', 'why')
    .action(async (opts: Conn & { reason?: string }) =>
      print(await run(opts, (c) => c.captureSnapshot(opts.reason))),
    );
  withConnection(
    snapshot
      .command('prune')
      .description('delete every snapshot but the most recent (repeats bounded calls)'),
  ).action(async (opts: Conn) =>
    print(
      await run(opts, async (c) => {
        const deleted: string[] = [];
        for (;;) {
          const r = await c.pruneSnapshots();
          deleted.push(...r.deleted);
          if (!r.truncated) return { deleted, remaining: r.remaining };
        }
      }),
    ),
  );
  withConnection(snapshot.command('rollback').description('roll the configuration back to a snapshot'))
    .argument('<id>', 'snapshot id')
    .action(async (id: string, opts: Conn) => print(await run(opts, (c) => c.rollback(id))));
}
