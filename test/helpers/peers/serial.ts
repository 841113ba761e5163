/**
 * Serial lines: a socat pseudo-terminal pair, modbus-serial's ServerSerial (RTU) on one end, and
 * an ASCII adapter (ASCII frames re-framed to the ServerTCP of a ModbusPeer).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import modbusSerial from 'modbus-serial';
import type { IServiceVector } from 'modbus-serial/ServerTCP.js';
import type { ServerSerial as ServerSerialType } from 'modbus-serial/ServerSerial.js';
import { MbapForwarder, type ModbusPeer } from './modbus.js';
import { eventually } from '../util.js';

export class PtyPair {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-pty-'));
  readonly a = join(this.dir, 'a');
  readonly b = join(this.dir, 'b');
  #proc: ChildProcess | undefined;

  async start(): Promise<void> {
    this.#proc = spawn('socat', [`pty,raw,echo=0,link=${this.a}`, `pty,raw,echo=0,link=${this.b}`], {
      stdio: 'ignore',
    });
    await eventually(() => existsSync(this.a) && existsSync(this.b), 5000, 'socat pty pair');
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill();
      await done;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const ServerSerial = (
  modbusSerial as unknown as { ServerSerial: new (v: IServiceVector, o: object) => ServerSerialType }
).ServerSerial;

/** modbus-serial's RTU server on a serial device. */
export class RtuSerialPeer {
  #server: ServerSerialType | undefined;
  constructor(
    readonly peer: ModbusPeer,
    readonly path: string,
  ) {}

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const server = new ServerSerial(this.peer.vector, {
        path: this.path,
        baudRate: 9600,
        unitID: 1,
        openCallback: (err: Error | null) => (err ? reject(err) : resolve()),
      });
      server.on('error', () => undefined);
      this.#server = server;
    });
  }

  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

const lrc = (b: Buffer) => {
  let sum = 0;
  for (const x of b) sum = (sum + x) & 0xff;
  return -sum & 0xff;
};

/** Modbus ASCII (`:` hex LRC CR LF) on a serial device, served by the ServerTCP of a ModbusPeer. */
export class AsciiSerialPeer {
  #port: SerialPort | undefined;
  constructor(
    readonly peer: ModbusPeer,
    readonly path: string,
  ) {}

  async start(): Promise<void> {
    const fwd = new MbapForwarder(this.peer);
    const port = new SerialPort({ path: this.path, baudRate: 9600, dataBits: 7, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    let text = '';
    port.on('data', async (d: Buffer) => {
      text += d.toString('latin1');
      for (;;) {
        const start = text.indexOf(':');
        const end = text.indexOf('\r\n', start);
        if (start < 0 || end < 0) return;
        const frame = Buffer.from(text.slice(start + 1, end), 'hex');
        text = text.slice(end + 2);
        if (frame.length < 3 || lrc(frame.subarray(0, -1)) !== frame[frame.length - 1]) continue;
        const reply = await fwd.send(Buffer.from(frame.subarray(0, -1)));
        const out = Buffer.concat([reply, Buffer.from([lrc(reply)])]);
        if (port.isOpen) port.write(`:${out.toString('hex').toUpperCase()}\r\n`);
      }
    });
    port.on('close', () => fwd.close());
    this.#port = port;
  }

  async stop(): Promise<void> {
    const p = this.#port;
    this.#port = undefined;
    if (p?.isOpen) await new Promise<void>((r) => p.close(() => r()));
  }
}
