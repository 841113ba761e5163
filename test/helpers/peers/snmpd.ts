/**
 * Debian's `snmpd` (Net-SNMP's agent) of the test's own on a free UDP port of 127.0.0.1, with a test
 * configuration: community `public` read-only and `private` read-write (v1, v2c), and a v3 user
 * `mwuser` with SHA authentication and AES privacy (read-write). sysLocation is fixed by the
 * configuration; sysName and sysContact stay writable. Killed (SIGKILL) and restarted on the same
 * port by the tests. Traps are sent with Debian's `snmptrap`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, have } from '../util.js';

export const SNMPD = have('snmpd') ? 'snmpd' : '/usr/sbin/snmpd';
export const V3 = { user: 'mwuser', auth: 'mw-auth-pass', priv: 'mw-priv-pass' };
export const LOCATION = 'Millwright test rack 7';

/** A UDP port free on 127.0.0.1 now. */
export async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export class Snmpd {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-snmpd-'));
  port = 0;
  #proc: ChildProcess | undefined;
  #log = '';

  get log(): string {
    return this.#log;
  }

  /** The agent's process id while it runs (for a bench's CPU figures). */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  async start(): Promise<number> {
    if (!this.port) this.port = await freeUdpPort();
    const conf = join(this.dir, 'snmpd.conf');
    writeFileSync(
      conf,
      [
        `agentAddress udp:127.0.0.1:${this.port}`,
        'rocommunity public 127.0.0.1',
        'rwcommunity private 127.0.0.1',
        `createUser ${V3.user} SHA "${V3.auth}" AES "${V3.priv}"`,
        `rwuser ${V3.user} priv`,
        `sysLocation ${LOCATION}`,
        '',
      ].join('\n'),
    );
    // -f foreground, -Lo log to stdout, -C only this configuration, no MIB files needed.
    const proc = spawn(SNMPD, ['-f', '-Lo', '-C', '-c', conf, '-p', join(this.dir, 'pid')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MIBS: '', SNMP_PERSISTENT_DIR: this.dir },
    });
    this.#proc = proc;
    const keep = (b: Buffer) => (this.#log = (this.#log + b.toString()).slice(-100_000));
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    await eventually(() => this.get('1.3.6.1.2.1.1.3.0') !== null, 15_000, `snmpd on ${this.port}`).catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${this.#log}`);
      },
    );
    return this.port;
  }

  /** One value with Debian's `snmpget` (v2c, public), or null when the agent does not answer. */
  get(oid: string): string | null {
    const r = spawnSync(
      'snmpget',
      ['-v2c', '-c', 'public', '-Oqv', '-t', '1', '-r', '0', `127.0.0.1:${this.port}`, oid],
      {
        encoding: 'utf8',
        env: { ...process.env, MIBS: '' },
      },
    );
    return r.status === 0 ? r.stdout.trim() : null;
  }

  /** Sends a v2c trap to `port` with Debian's `snmptrap`. */
  trap(port: number, trapOid: string, varbinds: Array<[string, string, string]>, community = 'public'): void {
    const args = ['-v2c', '-c', community, `127.0.0.1:${port}`, '', trapOid];
    for (const [oid, type, value] of varbinds) args.push(oid, type, value);
    const r = spawnSync('snmptrap', args, { encoding: 'utf8', env: { ...process.env, MIBS: '' } });
    if (r.status !== 0) throw new Error(`snmptrap failed: ${r.stderr}`);
  }

  async kill(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null) {
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await gone;
    }
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
