/** Issue 35, item 9: the systemd units of the three services pass `systemd-analyze verify`. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { skipUnless } from '../helpers/util.js';

const run = promisify(execFile);
const units = join(import.meta.dirname, '../../deploy/systemd');

async function verify(file: string): Promise<{ code: number; stderr: string }> {
  return run('systemd-analyze', ['verify', file]).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
}

test('the systemd units verify; a broken one does not', { skip: skipUnless('systemd-analyze') }, async () => {
  for (const service of ['edge', 'uns', 'manager']) {
    const file = join(units, `millwright-${service}.service`);
    const text = readFileSync(file, 'utf8');
    // Node flags may come before the entry point (the manager's young generation).
    assert.match(
      text,
      new RegExp(`ExecStart=/usr/bin/node (--[a-z-]+=\\d+ )*/opt/millwright/dist/cli/main.js ${service}\\n`),
    );
    const r = await verify(file);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr.trim(), '', r.stderr);
  }
  const dir = mkdtempSync(join(tmpdir(), 'mw-units-'));
  try {
    const broken = join(dir, 'millwright-broken.service');
    writeFileSync(
      broken,
      readFileSync(join(units, 'millwright-edge.service'), 'utf8').replace('Type=simple', 'Type=simplest'),
    );
    const r = await verify(broken);
    assert.ok(r.code !== 0 || /simplest/.test(r.stderr), 'the check can fail');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
