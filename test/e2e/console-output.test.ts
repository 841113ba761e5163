/** Issue 11, item 5: what a person sees on the console (readable logs, quiet requests, a whole banner). */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, startTestEdge } from '../helpers/edge.js';
import { startCli, tempDirs } from '../helpers/cli.js';
import { prettyLine } from '../../src/kernel/logging/pretty.js';

const dirs = tempDirs('mw-console-');
after(() => dirs.removeAll());

const PRETTY = /^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) [a-z.]+: /;

async function settle(p: { output(): string }): Promise<void> {
  // Log lines are written as they happen: wait until the output stops growing.
  let last = -1;
  while (p.output().length !== last) {
    last = p.output().length;
    // Until the output is quiet: time is the test.
    await new Promise((r) => setTimeout(r, 300));
  }
}

test('`--log-format pretty`: log lines for people, no JSON; a request adds no line at info', async () => {
  const p = await startCli([
    'edge',
    '--port',
    '0',
    '--datahub-port',
    '0',
    '--host',
    '127.0.0.1',
    '--data-dir',
    dirs.make(),
    '--log-format',
    'pretty',
  ]);
  try {
    for (let i = 0; i < 3; i++) await http(`${p.ready.services.edge!.url}/devicehub/version`);
    await settle(p);
    const lines = p.output().split('\n');
    const logLines = lines.filter((l) => PRETTY.test(l));
    assert.ok(logLines.length > 0, p.output());
    assert.ok(!lines.some((l) => l.startsWith('{"level"')), `no JSON lines: ${p.output()}`);
    assert.ok(!p.output().includes('incoming request'), p.output());
    assert.ok(!p.output().includes('request completed'), p.output());
  } finally {
    await p.stop();
  }
});

test('`--log-format json` keeps JSON lines; at --log-level debug a request is one line', async () => {
  const p = await startCli([
    'edge',
    '--port',
    '0',
    '--datahub-port',
    '0',
    '--host',
    '127.0.0.1',
    '--data-dir',
    dirs.make(),
    '--log-format',
    'json',
    '--log-level',
    'debug',
  ]);
  try {
    await http(`${p.ready.services.edge!.url}/devicehub/version?x=1`);
    await settle(p);
    const json = p
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; req?: { url: string } });
    assert.ok(json.length > 0);
    const requests = json.filter((l) => l.req?.url === '/devicehub/version?x=1');
    assert.equal(requests.length, 1, JSON.stringify(requests));
    assert.equal(requests[0]!.level, 20);
    assert.equal(requests[0]!.msg, 'request completed');
  } finally {
    await p.stop();
  }
});

test('`up` prints its banner whole, once every service is ready, right before the ready line', async () => {
  const p = await startCli(
    [
      'up',
      '--host',
      '127.0.0.1',
      '--datahub-host',
      '127.0.0.1',
      '--data-dir',
      dirs.make(),
      '--log-format',
      'pretty',
      ...['--port', '--datahub-port', '--uns-port', '--uns-mqtt-port', '--uns-mqtts-port'].flatMap((o) => [
        o,
        '0',
      ]),
      ...['--manager-port', '--manager-admin-port'].flatMap((o) => [o, '0']),
    ],
    { timeoutMs: 90_000 },
  );
  try {
    const lines = p.output().split('\n');
    const start = lines.findIndex((l) => /^Millwright \d/.test(l));
    const end = lines.findIndex((l) => l.startsWith('millwright-ready '));
    assert.ok(start >= 0 && end > start, p.output());
    const banner = lines.slice(start + 1, end);
    assert.ok(
      banner.every((l) => l.startsWith('  ')),
      `no log line inside the banner:\n${banner.join('\n')}`,
    );
    assert.ok(banner.some((l) => l.includes('edge service')));
    assert.ok(banner.some((l) => l.includes('unified namespace')));
    assert.ok(banner.some((l) => l.includes('edge manager')));
    assert.equal(banner.filter((l) => l.includes('first-run login')).length, 1);
    // `--log-format` given to `up` holds for the UNS and the manager too.
    assert.ok(!lines.some((l) => l.startsWith('{"level"')), `no JSON log line:\n${p.output()}`);
    assert.ok(
      lines.some((l) => PRETTY.test(l) && / (uns|manager)[a-z.]*: /.test(l)),
      p.output(),
    );
  } finally {
    await p.stop();
  }
});

test('`--log-format none`: nothing on standard output, every entry still in the log store', async () => {
  const written: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    written.push(String(chunk));
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;
  let t: Awaited<ReturnType<typeof startTestEdge>> | undefined;
  try {
    t = await startTestEdge({ logFormat: 'none', logLevel: 'info' });
    await t.edge.shell.logStore.flush();
  } finally {
    process.stdout.write = write;
  }
  try {
    assert.ok(!written.some((l) => l.includes('"level"') || / INFO {2}edge/.test(l)), written.join(''));
    const stored = await t.edge.shell.logStore.query({ level: 'info' });
    assert.ok(stored.entries.length > 0, 'the start-up entries are in the log store');
  } finally {
    await t.stop();
  }
});

test('prettyLine: time, level, component, message and fields', () => {
  const line = prettyLine(
    JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 1, 12, 0, 0, 5),
      component: 'edge.auth',
      msg: 'login refused',
      username: 'bob',
      n: 2,
    }),
  );
  assert.equal(line, '12:00:00.005 WARN  edge.auth: login refused username=bob n=2\n');
  assert.equal(prettyLine('not json'), 'not json\n');
});
