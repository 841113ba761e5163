/**
 * One service process per data directory. A service takes `<dataDir>/service.lock` (its pid and
 * command) when it starts and removes it when it stops; a second service on the same directory
 * stops at once with a message naming the directory and the process holding it. A lock left by a
 * process that was killed is stale (its pid no longer runs a Millwright service) and is taken over.
 *
 * The offline CLI commands (`edge api-client create --data-dir ...`) do not take the lock: they
 * are meant to run beside the service.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../config.js';

export class DataDirInUseError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirInUseError';
  }
}

interface LockContent {
  pid: number;
  service: string;
  startedAt: string;
}

/** Data directories locked by this process (a second service in the same process is refused too). */
const held = new Set<string>();

export class DataDirLock {
  readonly file: string;
  #released = false;

  private constructor(file: string) {
    this.file = file;
  }

  /** Takes the lock of `dataDir` for `service`, or throws `DataDirInUseError`. */
  static acquire(dataDir: string, service: string): DataDirLock {
    const dir = resolve(dataDir);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'service.lock');
    if (held.has(file)) throw inUse(dir, { pid: process.pid, service, startedAt: '' });
    for (let attempt = 0; attempt < 3; attempt++) {
      let fd: number;
      try {
        fd = openSync(file, 'wx', 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const holder = readHolder(file);
        if (holder && isRunning(holder.pid)) throw inUse(dir, holder);
        // Empty and fresh: another process is writing it right now.
        if (!holder && Date.now() - mtimeMs(file) < 5000) {
          throw inUse(dir, { pid: 0, service: 'service', startedAt: '' });
        }
        // Stale (the holder was killed): take it over. `rm` then `wx` again, so that of two
        // processes taking over at once only one wins.
        rmSync(file, { force: true });
        continue;
      }
      const content: LockContent = { pid: process.pid, service, startedAt: new Date().toISOString() };
      writeSync(fd, `${JSON.stringify(content)}\n`);
      closeSync(fd);
      held.add(file);
      return new DataDirLock(file);
    }
    throw new DataDirInUseError(`could not take the lock ${file}; another process keeps taking it`);
  }

  /** Removes the lock (only if it is still ours). Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    held.delete(this.file);
    if (readHolder(this.file)?.pid === process.pid) rmSync(this.file, { force: true });
  }
}

function mtimeMs(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

function readHolder(file: string): LockContent | null {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as LockContent;
    return typeof parsed.pid === 'number' ? parsed : null;
  } catch {
    // Empty or half-written: the writer died between open and write, or is writing right now.
    return null;
  }
}

/** Whether `pid` runs (and, where /proc tells, runs Node: a reused pid of another program is not ours). */
function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return /node|millwright/i.test(cmdline);
  } catch {
    return true;
  }
}

function inUse(dir: string, holder: LockContent): DataDirInUseError {
  const who =
    holder.pid === process.pid
      ? 'this process'
      : holder.pid
        ? `process ${holder.pid}`
        : 'a process that is starting';
  return new DataDirInUseError(
    `data directory ${dir} is in use by ${who} (millwright ${holder.service}${holder.startedAt ? `, started ${holder.startedAt}` : ''}); stop it first, or choose another directory with --data-dir`,
  );
}
