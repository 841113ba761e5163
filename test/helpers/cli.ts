/**
 * The `millwright` command as a separate process, as a user runs it: for the CLI tests and for
 * the benchmarks, which run each service in its own process so that measurements are honest.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseReadyLine, type ReadyLine } from '../../src/kernel/ready.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

/**
 * Node arguments that run the built CLI (`dist/`, as `npm start` and a deployment do), as
 * `node <CLI_ARGS> <command...>`: a process starts in a fraction of the time the sources through
 * tsx take, and its memory is the product's. `runCli`, `runCliJson` and `startCli` build first
 * when a source changed (`ensureBuilt`); a caller that runs `CLI_ARGS` itself calls it first.
 * `MILLWRIGHT_CLI_DIST=<folder>` runs another build instead, as it is (a copy of `dist/` beside
 * it, e.g. `dist-before/`, so that `package.json` and the packages resolve): a bench's
 * before/after of two builds, run alternately.
 */
export const CLI_ARGS = [join(process.env.MILLWRIGHT_CLI_DIST ?? join(root, 'dist'), 'cli/main.js')];

let built = false;
/**
 * Builds `dist/` when a source is newer than the last build (scripts/build.mjs `--if-changed`),
 * once per process. The test runner builds before the suite and says so in
 * `MILLWRIGHT_TEST_DIST_BUILT`: then nothing is looked at again.
 */
export function ensureBuilt(): void {
  if (built || process.env.MILLWRIGHT_TEST_DIST_BUILT === '1' || process.env.MILLWRIGHT_CLI_DIST) return;
  execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), '--if-changed'], {
    stdio: 'inherit',
    cwd: root,
  });
  built = true;
}

/**
 * The environment without any `MILLWRIGHT_*` variable of the caller, plus `extra`. The edge's
 * OPC UA server is off (its start costs seconds and its default port 4840 would be shared by
 * parallel suites) unless `extra` turns it on.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('MILLWRIGHT_')) delete env[k];
  return { ...env, MILLWRIGHT_EDGE_OPCUA_ENABLED: 'false', ...extra };
}

/**
 * For `up` in a test: port 0 for the UNS's and the manager's listeners, whose defaults (8883,
 * 9443, 8446...) a test must not bind. A test about a taken default port overrides its own.
 */
export const UP_PORTS_FREE: Readonly<Record<string, string>> = {
  MILLWRIGHT_UNS_PORT: '0',
  MILLWRIGHT_UNS_MQTT_PORT: '0',
  MILLWRIGHT_UNS_MQTTS_PORT: '0',
  MILLWRIGHT_MANAGER_PORT: '0',
  MILLWRIGHT_MANAGER_ADMIN_PORT: '0',
};

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; a failing command answers its exit code instead of throwing. */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
  /** Kills a command that hangs (SIGTERM after this many ms; the result then has code null). */
  timeoutMs = 0,
): Promise<CliRun> {
  ensureBuilt();
  return run(process.execPath, [...CLI_ARGS, ...args], { env, timeout: timeoutMs }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: CliRun) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** Runs a command that prints JSON (the administration commands) and answers the parsed output. */
export function runCliJson(args: string[], env: NodeJS.ProcessEnv): any {
  ensureBuilt();
  return JSON.parse(execFileSync(process.execPath, [...CLI_ARGS, ...args], { env, encoding: 'utf8' }));
}

export interface CliProcess {
  pid: number;
  /** The machine-readable ready line the process printed (src/kernel/ready.ts). */
  ready: ReadyLine;
  /** Everything the process printed on its standard output so far. */
  output(): string;
  /** Everything the process printed on its standard error so far (a crash's last words). */
  stderr(): string;
  /** How the process ended: its exit code or the signal that killed it (both null while it runs). */
  exitStatus(): { code: number | null; signal: string | null };
  /** SIGTERM, then the exit code (null when a signal ended the process). */
  stop(): Promise<number | null>;
  /** Resolves when the process has exited (by any means). */
  exited: Promise<void>;
}

/**
 * Starts a long-running command (`edge`, `uns`, `up`) and waits for its ready line
 * (`millwright-ready {...}`), printed once every service it runs is up.
 */
export async function startCli(
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
    inheritStderr?: boolean;
  } = {},
): Promise<CliProcess> {
  ensureBuilt();
  // Node flags for the service processes while investigating (`--cpu-prof --cpu-prof-dir=/tmp/p`).
  const nodeArgs = process.env.MILLWRIGHT_CHILD_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, ...CLI_ARGS, ...args], {
    env: options.env ?? cleanEnv(),
    stdio: ['ignore', 'pipe', options.inheritStderr ? 'inherit' : 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const ready = await new Promise<ReadyLine>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A process that is not ready is of no use, and alive it would keep the test file running.
      child.kill('SIGKILL');
      reject(new Error(`not ready in time; stdout: ${out} stderr: ${err}`));
    }, options.timeoutMs ?? 30_000);
    let scanned = 0;
    child.stdout!.on('data', (d) => {
      out += d;
      // Complete lines only: the ready line is one line ending with a newline.
      const end = out.lastIndexOf('\n');
      if (end < scanned) return;
      for (const line of out.slice(scanned, end).split('\n')) {
        const parsed = parseReadyLine(line);
        if (parsed) {
          clearTimeout(timer);
          resolve(parsed);
        }
      }
      scanned = end + 1;
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}; stdout: ${out} stderr: ${err}`));
    });
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    pid: child.pid!,
    exited,
    ready,
    output: () => out,
    stderr: () => err,
    exitStatus: () => ({ code: child.exitCode, signal: child.signalCode }),
    stop: () =>
      new Promise<number | null>((resolve) => {
        child.removeAllListeners('exit');
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.on('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

/** Temporary directories made by a test file, removed together at its end. */
export function tempDirs(prefix: string): { make(): string; removeAll(): void } {
  const dirs: string[] = [];
  return {
    make() {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    removeAll() {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
