/**
 * A Podman of the test's own: `podman system service` answering the Docker Engine API on a unix
 * socket in a temporary directory, with its storage (vfs), run directory and network
 * configuration there too, so that nothing of the machine's own Podman is read or changed.
 * `importImage` makes an image from a tarball the test builds (no registry needed).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../util.js';

export class Podman {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-podman-'));
  readonly socket = join(this.dir, 'podman.sock');
  #proc: ChildProcess | undefined;
  #log = '';

  get log(): string {
    return this.#log;
  }

  /** The environment of every podman command: the test's own containers.conf. */
  private env(): NodeJS.ProcessEnv {
    return { ...process.env, CONTAINERS_CONF: join(this.dir, 'containers.conf') };
  }

  private args(): string[] {
    return ['--root', join(this.dir, 'root'), '--runroot', join(this.dir, 'run'), '--storage-driver', 'vfs'];
  }

  async start(): Promise<void> {
    mkdirSync(join(this.dir, 'networks'), { recursive: true });
    mkdirSync(join(this.dir, 'tmp'), { recursive: true });
    writeFileSync(
      join(this.dir, 'containers.conf'),
      `[network]\nnetwork_config_dir = "${join(this.dir, 'networks')}"\n[engine]\ntmp_dir = "${join(this.dir, 'tmp')}"\n`,
    );
    const proc = spawn('podman', [...this.args(), 'system', 'service', '--time=0', `unix://${this.socket}`], {
      env: this.env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#proc = proc;
    const keep = (b: Buffer) => (this.#log = (this.#log + b.toString()).slice(-100_000));
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    await eventually(() => existsSync(this.socket), 15_000, `podman socket ${this.socket}`).catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${this.#log}`);
      },
    );
  }

  /** A podman command against the same storage; throws with its output when it fails. */
  run(args: string[]): string {
    const r = spawnSync('podman', [...this.args(), ...args], { env: this.env(), encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`podman ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  }

  /** An image `tag` holding the given files, made with `podman import` of a tarball. */
  importImage(tag: string, files: Record<string, string>): string {
    const root = join(this.dir, `rootfs-${tag.replace(/[^a-z0-9]/gi, '_')}`);
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(join(root, name, '..'), { recursive: true });
      writeFileSync(join(root, name), content, { mode: 0o755 });
    }
    const tar = `${root}.tar`;
    const r = spawnSync('tar', ['-C', root, '-cf', tar, '.']);
    if (r.status !== 0) throw new Error(`tar failed: ${r.stderr}`);
    return this.run(['import', tar, tag]).trim();
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null && p.signalCode === null) {
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    // The vfs storage has read-only layers: make them removable.
    spawnSync('chmod', ['-R', 'u+w', this.dir]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
