/**
 * An rsyslog of the test's own (Debian's /usr/sbin/rsyslogd): its own config file in a temporary
 * directory, a TCP input (imtcp, octet counting understood) on a free port, plain or TLS (the
 * gtls netstream driver, rsyslog-gnutls), writing every message it receives to a file as
 * `<MSGID> <STRUCTURED-DATA> <MSG>` lines. The port is kept across restarts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, have, portOpen } from '../util.js';

export const RSYSLOGD = '/usr/sbin/rsyslogd';
export const GTLS_DRIVER = '/usr/lib/x86_64-linux-gnu/rsyslog/lmnsd_gtls.so';

/** A reason to skip when rsyslogd (or, for TLS, its gtls driver) is absent; fails on CI. */
export function rsyslogMissing(tls = false): string | false {
  const missing = !have(RSYSLOGD)
    ? 'rsyslogd (Debian package rsyslog) is not installed'
    : tls && !existsSync(GTLS_DRIVER)
      ? 'the gtls driver of rsyslog (Debian package rsyslog-gnutls) is not installed'
      : false;
  if (missing && process.env.CI === 'true') throw new Error(`${missing}: required on CI`);
  return missing;
}

export interface RsyslogOptions {
  tls?: { ca: string; cert: string; key: string };
}

export class Rsyslog {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-rsyslog-'));
  readonly output = join(this.dir, 'out.log');
  port = 0;
  #proc: ChildProcess | undefined;
  #log = '';

  constructor(readonly options: RsyslogOptions = {}) {}

  get log(): string {
    return this.#log;
  }

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const tls = this.options.tls;
    const lines = [
      `global(workDirectory="${this.dir}" maxMessageSize="64k"${
        tls
          ? ` defaultNetstreamDriver="gtls" defaultNetstreamDriverCAFile="${tls.ca}" defaultNetstreamDriverCertFile="${tls.cert}" defaultNetstreamDriverKeyFile="${tls.key}"`
          : ''
      })`,
      tls
        ? 'module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")'
        : 'module(load="imtcp")',
      `input(type="imtcp" port="${this.port}" address="127.0.0.1")`,
      'template(name="lines" type="string" string="%msgid% %structured-data% %msg%\\n")',
      `action(type="omfile" file="${this.output}" template="lines")`,
    ];
    const conf = join(this.dir, 'rsyslog.conf');
    writeFileSync(conf, lines.join('\n') + '\n');
    const proc = spawn(RSYSLOGD, ['-n', '-f', conf, '-i', join(this.dir, 'rsyslogd.pid')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#proc = proc;
    const keep = (b: Buffer) => {
      this.#log = (this.#log + b.toString()).slice(-100_000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    await eventually(() => portOpen(this.port), 15_000, `rsyslogd on ${this.port}`).catch((err: Error) => {
      throw new Error(`${err.message}\n${this.#log}`);
    });
    return this.port;
  }

  /** The lines written so far. */
  lines(): string[] {
    if (!existsSync(this.output)) return [];
    return readFileSync(this.output, 'utf8').split('\n').filter(Boolean);
  }

  /** Freezes it (SIGSTOP): it reads nothing more, as a hung receiver. */
  pause(): void {
    this.#proc?.kill('SIGSTOP');
  }

  /** Stops it: SIGKILL (no flush, as a crash) or SIGTERM. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null && p.signalCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill(signal);
      await done;
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
