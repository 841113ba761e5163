/** A Mosquitto broker as a device peer (for the MQTT driver). */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Socket } from 'node:net';
import { eventually, freePort } from './util.js';

/** A Mosquitto broker of its own on a fixed free port (so that it can be stopped and restarted). */
export class Mosquitto {
  #proc: ChildProcess | undefined;
  port = 0;

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const bin = existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto';
    this.#proc = spawn(bin, ['-p', String(this.port)], { stdio: 'ignore' });
    const port = this.port;
    await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          const s = new Socket();
          s.once('error', () => resolve(false));
          s.connect(port, '127.0.0.1', () => {
            s.destroy();
            resolve(true);
          });
        }),
      5000,
      'mosquitto listening',
    );
    return this.port;
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill();
      await done;
    }
  }
}
