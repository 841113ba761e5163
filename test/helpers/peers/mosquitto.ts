/**
 * A Mosquitto broker of the test's own: the device peer of the MQTT driver and the broker of the
 * MQTT integrations (free port kept across restarts, optional persistence, TLS, password file).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, have, portOpen } from '../util.js';

export interface MosquittoOptions {
  /** Keep sessions and queued messages in a file across restarts. */
  persistence?: boolean;
  /** TLS listener with these files; `requireCertificate` for mutual TLS. */
  tls?: {
    cert: string;
    key: string;
    ca: string;
    requireCertificate?: boolean;
    useIdentityAsUsername?: boolean;
  };
  /** user → password; anonymous access is refused when given. */
  passwords?: Record<string, string>;
}

/** A Mosquitto of the test's own on a free port, with a config file in a temporary directory. */
export class Mosquitto {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-mosq-'));
  port = 0;
  #proc: ChildProcess | undefined;
  #log = '';

  constructor(readonly options: MosquittoOptions = {}) {}

  get log(): string {
    return this.#log;
  }

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const o = this.options;
    const lines = [`listener ${this.port} 127.0.0.1`, 'max_queued_messages 0', 'max_inflight_messages 0'];
    if (o.persistence)
      lines.push('persistence true', `persistence_location ${this.dir}/`, 'autosave_interval 1');
    if (o.passwords) {
      const file = join(this.dir, 'passwd');
      writeFileSync(file, '');
      for (const [user, pass] of Object.entries(o.passwords)) {
        const r = spawnSync('mosquitto_passwd', ['-b', file, user, pass]);
        if (r.status !== 0) throw new Error(`mosquitto_passwd failed: ${r.stderr}`);
      }
      lines.push('allow_anonymous false', `password_file ${file}`);
    } else lines.push('allow_anonymous true');
    if (o.tls) {
      lines.push(`cafile ${o.tls.ca}`, `certfile ${o.tls.cert}`, `keyfile ${o.tls.key}`);
      if (o.tls.requireCertificate) lines.push('require_certificate true');
      if (o.tls.useIdentityAsUsername) lines.push('use_identity_as_username true');
    }
    const conf = join(this.dir, 'mosquitto.conf');
    writeFileSync(conf, lines.join('\n') + '\n');
    // Started as root, Mosquitto drops to its own user: it must read (and persist in) this directory.
    chmodSync(this.dir, 0o777);
    for (const n of readdirSync(this.dir)) chmodSync(join(this.dir, n), 0o644);
    const bin = have('mosquitto') ? 'mosquitto' : '/usr/sbin/mosquitto';
    const proc = spawn(bin, ['-c', conf, '-v'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#proc = proc;
    const keep = (b: Buffer) => {
      this.#log = (this.#log + b.toString()).slice(-200_000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    await eventually(() => portOpen(this.port), 10_000, `mosquitto on ${this.port}`).catch((err: Error) => {
      throw new Error(`${err.message}\n${this.#log}`);
    });
    return this.port;
  }

  /** The broker's process id while it runs (for its memory and CPU from /proc, in benches). */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await done;
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
