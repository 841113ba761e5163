/**
 * `millwright uns watch TOPIC`: MQTT messages of the UNS as JSON lines (`--json`) or as one line
 * per message (topic, time, payload), with an MQTT account's user name and password.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { UnsClient } from '../client/index.js';
import { ConfigError } from '../kernel/config.js';

export function unsWatchCommand(uns: Command): void {
  const watch = uns
    .command('watch')
    .description('MQTT messages on the UNS, live (Ctrl-C stops)')
    .argument('[topic]', 'MQTT topic filter', '#')
    .addOption(
      new Option('--mqtt-url <url>', 'the broker [MILLWRIGHT_UNS_MQTT_URL]').default(
        process.env.MILLWRIGHT_UNS_MQTT_URL ?? 'mqtts://localhost:8883',
        'mqtts://localhost:8883',
      ),
    )
    .addOption(
      new Option(
        '--username <name>',
        'an MQTT account (millwright uns account create) [MILLWRIGHT_UNS_USERNAME]',
      ),
    )
    .addOption(new Option('--password <password>', 'its password [MILLWRIGHT_UNS_PASSWORD]'))
    .addOption(new Option('--ca <file>', "PEM certificate to trust (the UNS's <data-dir>/tls/server.crt)"))
    .addOption(new Option('--insecure', 'accept any certificate'))
    .option('--json', 'one JSON line per message: { topic, payload, retain, time }')
    .addOption(new Option('--count <n>', 'stop after n messages').argParser((v) => Number.parseInt(v, 10)))
    .action(async (topic: string) => {
      const o = watch.opts<{
        mqttUrl: string;
        username?: string;
        password?: string;
        ca?: string;
        insecure?: boolean;
        json?: boolean;
        count?: number;
      }>();
      const username = o.username ?? process.env.MILLWRIGHT_UNS_USERNAME;
      const password = o.password ?? process.env.MILLWRIGHT_UNS_PASSWORD;
      if (!username || !password) {
        throw new ConfigError(
          'uns watch needs an MQTT account: --username and --password (or MILLWRIGHT_UNS_USERNAME and MILLWRIGHT_UNS_PASSWORD)',
        );
      }
      const client = new UnsClient({
        url: 'https://localhost',
        mqttUrl: o.mqttUrl,
        ...(o.ca ? { ca: readFileSync(o.ca) } : {}),
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
      await mqtt.subscribeAsync(topic);
    });
}
