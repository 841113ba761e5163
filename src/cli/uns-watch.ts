/**
 * `millwright uns watch TOPIC`: MQTT messages of the UNS as JSON lines (`--json`) or as one line
 * per message (topic, time, payload), with an MQTT account's user name and password. The broker:
 * `--mqtt-url` (MILLWRIGHT_UNS_MQTT_URL), else the running UNS of its data directory (what `up`
 * started, wherever a taken port moved it; its certificate trusted), else mqtts://localhost:8883.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { UnsClient } from '../client/uns.js';
import { ConfigError } from '../kernel/config.js';
import { discover } from './discover.js';

interface WatchFlags {
  mqttUrl?: string;
  dataDir?: string;
  username?: string;
  password?: string;
  ca?: string;
  insecure?: boolean;
  json?: boolean;
  count?: number;
}

/** The broker's address and the certificate to trust: the flags, their variables, the running UNS. */
export function unsMqttAddress(o: WatchFlags): { mqttUrl: string; ca: string | undefined } {
  const chosen = o.mqttUrl ?? process.env.MILLWRIGHT_UNS_MQTT_URL;
  const ca = o.ca ?? process.env.MILLWRIGHT_UNS_CA;
  if (chosen) return { mqttUrl: chosen, ca };
  const found = discover('uns', o.dataDir);
  const running = found.service;
  if (running?.mqttsUrl) return { mqttUrl: running.mqttsUrl, ca: ca ?? (o.insecure ? undefined : found.ca) };
  if (running?.mqttUrl) return { mqttUrl: running.mqttUrl, ca };
  return { mqttUrl: 'mqtts://localhost:8883', ca };
}

export function unsWatchCommand(uns: Command): void {
  const watch = uns
    .command('watch')
    .description('MQTT messages on the UNS, live (Ctrl-C stops)')
    .argument('[topic]', 'MQTT topic filter', '#')
    .addOption(
      new Option(
        '--mqtt-url <url>',
        'the broker (default: the running UNS of --data-dir, else mqtts://localhost:8883) [MILLWRIGHT_UNS_MQTT_URL]',
      ),
    )
    .addOption(
      new Option(
        '--data-dir <dir>',
        "the UNS's data directory, where a running UNS (or `up`) writes its addresses (default: ~/.millwright/uns) [MILLWRIGHT_UNS_DATA_DIR]",
      ),
    )
    .addOption(
      new Option(
        '--username <name>',
        'an MQTT account (millwright uns account create) [MILLWRIGHT_UNS_USERNAME]',
      ),
    )
    .addOption(new Option('--password <password>', 'its password [MILLWRIGHT_UNS_PASSWORD]'))
    .addOption(
      new Option(
        '--ca <file>',
        'PEM certificate to trust (default for a UNS found in --data-dir: its tls/server.crt) [MILLWRIGHT_UNS_CA]',
      ),
    )
    .addOption(new Option('--insecure', 'accept any certificate'))
    .option('--json', 'one JSON line per message: { topic, payload, retain, time }')
    .addOption(new Option('--count <n>', 'stop after n messages').argParser((v) => Number.parseInt(v, 10)))
    .action(async (topic: string) => {
      const o = watch.opts<WatchFlags>();
      const username = o.username ?? process.env.MILLWRIGHT_UNS_USERNAME;
      const password = o.password ?? process.env.MILLWRIGHT_UNS_PASSWORD;
      if (!username || !password) {
        throw new ConfigError(
          'uns watch needs an MQTT account: --username and --password (or MILLWRIGHT_UNS_USERNAME and MILLWRIGHT_UNS_PASSWORD); create one with `millwright uns account create --username U --password P --rule "plant/#:Sub"`',
        );
      }
      if (o.count !== undefined && !(o.count > 0)) throw new ConfigError('--count takes a number above 0');
      const at = unsMqttAddress(o);
      let ca: Buffer | undefined;
      if (at.ca) {
        try {
          ca = readFileSync(at.ca);
        } catch (err) {
          throw new ConfigError(`--ca ${at.ca}: ${(err as Error).message}`);
        }
      }
      const client = new UnsClient({
        url: 'https://localhost',
        mqttUrl: at.mqttUrl,
        ...(ca ? { ca } : {}),
        ...(o.insecure ? { insecure: true } : {}),
      });
      const mqtt = await client.mqtt({ username, password });
      let seen = 0;
      const done = () => {
        mqtt.end(false, {}, () => process.exit(0));
      };
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
      mqtt.on('message', (t, payload, packet) => {
        const text = payload.toString('utf8');
        let value: unknown = text;
        try {
          value = JSON.parse(text);
        } catch {
          value = text;
        }
        const time = new Date().toISOString();
        process.stdout.write(
          o.json
            ? `${JSON.stringify({ topic: t, payload: value, retain: packet.retain, time })}\n`
            : `${time.slice(11, 23)}  ${t}  ${text}\n`,
        );
        if (o.count && ++seen >= o.count) done();
      });
      let granted: { qos: number }[];
      try {
        granted = await mqtt.subscribeAsync(topic);
      } catch (err) {
        mqtt.end(true);
        throw new ConfigError(`the UNS refused the subscription to "${topic}": ${(err as Error).message}`);
      }
      if (granted.some((g) => g.qos >= 128)) {
        mqtt.end(true);
        throw new ConfigError(
          `the UNS refused the subscription to "${topic}": the rules of account "${username}" do not allow it (or the filter is not valid); \`millwright uns account list\` shows its rules, \`millwright uns account add-rule --id ID --rule "${topic}:Sub"\` adds one`,
        );
      }
    });
}
