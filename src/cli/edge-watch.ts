/**
 * `millwright edge watch [SUBJECT]`: live values from the DataHub without writing code, as a
 * table updated in place (on a terminal) or as JSON lines (`--json`).
 */
import { Command, Option } from 'commander';
import { ConfigError } from '../kernel/config.js';
import { addEdgeClientOptions, edgeNats, type EdgeClientFlags } from './edge-client.js';

/**
 * Every read of every tag, once: `devicehub.raw.>` carries the value with its state and time
 * (`devicehub.value.<device>.<tag>` repeats the value alone, and `devicehub.>` would show both).
 */
export const WATCH_DEFAULT_SUBJECT = 'devicehub.raw.>';

interface Row {
  key: string;
  value: string;
  time: string;
  state: string;
}

export function edgeWatchCommand(edge: Command): void {
  const watch = addEdgeClientOptions(
    edge
      .command('watch')
      .description(
        'live values on the DataHub: a table updated in place, or JSON lines with --json (Ctrl-C stops)',
      )
      .argument('[subject]', 'NATS subject or pattern (devicehub.> for every topic)', WATCH_DEFAULT_SUBJECT),
    { credentials: false },
  )
    .addOption(
      new Option(
        '--nats-url <url>',
        "the DataHub (default: the running edge's of --data-dir, else nats://<host of --url>:4222) [MILLWRIGHT_EDGE_NATS_URL]",
      ),
    )
    .addOption(
      new Option('--access-key <key>', 'DataHub access key, for a remote edge [MILLWRIGHT_EDGE_ACCESS_KEY]'),
    )
    .option('--json', 'one JSON line per message: { subject, ...payload }')
    .addOption(new Option('--count <n>', 'stop after n messages').argParser((v) => Number.parseInt(v, 10)))
    .action(async (subject: string) => {
      const o = watch.opts<EdgeClientFlags & { json?: boolean; count?: number; accessKey?: string }>();
      if (o.count !== undefined && !(o.count > 0)) throw new ConfigError('--count takes a number above 0');
      const { client, nc } = await edgeNats(o, o.accessKey ?? process.env.MILLWRIGHT_EDGE_ACCESS_KEY);
      const stop = () => void nc.drain();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const sub = nc.subscribe(subject, o.count ? { max: o.count } : {});
      const table = o.json ? null : new Table(Boolean(process.stdout.isTTY));
      for await (const m of sub) {
        let payload: unknown;
        try {
          payload = JSON.parse(new TextDecoder().decode(m.data));
        } catch {
          payload = new TextDecoder().decode(m.data);
        }
        if (table) table.update(m.subject, payload);
        else
          process.stdout.write(
            `${JSON.stringify(
              payload !== null && typeof payload === 'object' && !Array.isArray(payload)
                ? { subject: m.subject, ...payload }
                : { subject: m.subject, value: payload },
            )}\n`,
          );
      }
      table?.flush();
      await nc.close();
      client.close();
      process.exit(0);
    });
}

/**
 * `millwright edge write DEVICE TAG VALUE`: a write through the tag's Command subject; prints the
 * write response and exits 1 when the write failed.
 */
export function edgeWriteCommand(edge: Command): void {
  const write = addEdgeClientOptions(
    edge
      .command('write')
      .description('write a value to a tag (devicehub.command.<device>.<tag>); prints the write response')
      .argument('<device>', 'device name')
      .argument('<tag>', 'tag name')
      .argument('<value>', 'a JSON value (12.5, true, "text"); anything else is sent as a string'),
    { credentials: false },
  )
    .addOption(
      new Option(
        '--nats-url <url>',
        "the DataHub (default: the running edge's of --data-dir, else nats://<host of --url>:4222) [MILLWRIGHT_EDGE_NATS_URL]",
      ),
    )
    .addOption(
      new Option('--access-key <key>', 'DataHub access key, for a remote edge [MILLWRIGHT_EDGE_ACCESS_KEY]'),
    )
    .action(async (device: string, tag: string, value: string) => {
      const o = write.opts<EdgeClientFlags & { accessKey?: string }>();
      const { client, nc } = await edgeNats(o, o.accessKey ?? process.env.MILLWRIGHT_EDGE_ACCESS_KEY);
      let payload: string;
      try {
        JSON.parse(value);
        payload = value;
      } catch {
        payload = JSON.stringify(value);
      }
      try {
        const m = await nc.request(`devicehub.command.${device}.${tag}`, new TextEncoder().encode(payload), {
          timeout: 10_000,
        });
        const answer = JSON.parse(new TextDecoder().decode(m.data)) as { success?: boolean; error?: string };
        process.stdout.write(`${JSON.stringify(answer)}\n`);
        if (answer.success === false) process.exitCode = 1;
      } catch (err) {
        const why =
          (err as { code?: string }).code === '503' ? 'nobody listens there' : (err as Error).message;
        throw new ConfigError(
          `no answer on devicehub.command.${device}.${tag} (${why}): is there a tag "${tag}" on device "${device}"? \`millwright edge tag list --device ${device}\` lists its tags`,
        );
      } finally {
        await nc.close();
        client.close();
      }
    });
}

/** Rows by tag (`device/tag`, from the payload) or by subject; redrawn at most 5 times a second. */
class Table {
  readonly #rows = new Map<string, Row>();
  #timer: NodeJS.Timeout | undefined;
  constructor(readonly inPlace: boolean) {}

  update(subject: string, payload: unknown): void {
    const p = (payload && typeof payload === 'object' ? payload : {}) as Record<string, unknown>;
    const valueSubject = /^devicehub\.value\.([^.]+)\.(.+)$/.exec(subject);
    const key =
      typeof p.deviceName === 'string' && typeof p.tagName === 'string'
        ? `${p.deviceName}/${p.tagName}`
        : valueSubject
          ? `${valueSubject[1]}/${valueSubject[2]}`
          : subject;
    const isTagPayload = 'success' in p;
    const value = isTagPayload ? p.value : payload;
    const row: Row = {
      key,
      value: typeof value === 'string' ? value : JSON.stringify(value),
      time: new Date(typeof p.timestamp === 'number' ? p.timestamp : Date.now()).toISOString().slice(11, 23),
      state: isTagPayload
        ? p.success
          ? 'OK'
          : `Failed: ${String(p.error ?? '')}`
        : (this.#rows.get(key)?.state ?? ''),
    };
    this.#rows.set(key, row);
    if (!this.inPlace) {
      process.stdout.write(`${format([row])}\n`);
      return;
    }
    this.#timer ??= setTimeout(() => this.flush(), 200);
  }

  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.inPlace) return;
    const rows = [...this.#rows.values()].sort((a, b) => a.key.localeCompare(b.key));
    // Home and clear, then the table: it updates in place.
    process.stdout.write(`\x1b[H\x1b[2J${format(rows, true)}\n`);
  }
}

function format(rows: Row[], header = false): string {
  const all = header
    ? [{ key: 'TAG / SUBJECT', value: 'VALUE', time: 'TIME', state: 'STATE' }, ...rows]
    : rows;
  const w = (f: keyof Row) => Math.max(header ? 0 : 24, ...all.map((r) => r[f].length));
  const [kw, vw, tw] = [w('key'), Math.min(w('value'), 40), w('time')];
  return all
    .map((r) => `${r.key.padEnd(kw)}  ${r.value.slice(0, 40).padEnd(vw)}  ${r.time.padEnd(tw)}  ${r.state}`)
    .join('\n');
}
