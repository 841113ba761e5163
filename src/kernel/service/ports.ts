/**
 * The one free-port policy. A service binds each of its ports through `PortPolicy.bind`, naming
 * the option that sets it. A single service (`millwright edge`) stops on a taken port with a
 * message naming the option; `millwright up` passes the options whose port came from a default,
 * and those fall back to a free port, with a note for the banner.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { PortInUseError, envName } from '../config.js';

export interface PortPolicyOptions {
  /** The service's name in environment variables (`edge` → `MILLWRIGHT_EDGE_PORT`). */
  service: string;
  /** For people: `edge service`. */
  label?: string;
  /** Options whose port, when taken, is replaced by a free one (for `millwright up`). */
  pickFree?: Iterable<string>;
  /**
   * Where the replacement ports are remembered (`<dataDir>/ports.json`), so that a restart takes
   * the same ones again and saved client settings keep working.
   */
  memoryFile?: string;
}

export class PortPolicy {
  readonly #service: string;
  readonly #label: string;
  readonly #pickFree: Set<string>;
  /** The port each option ended up on. */
  readonly bound: Record<string, number> = {};
  /** What changed, for people (`datahub-port 4222 is taken; the edge service takes 40123 instead`). */
  readonly notes: string[] = [];

  constructor(options: PortPolicyOptions) {
    this.#service = options.service;
    this.#label = options.label ?? options.service;
    this.#pickFree = new Set(options.pickFree ?? []);
    this.#memoryFile = options.memoryFile;
  }

  readonly #memoryFile: string | undefined;

  #remembered(): Record<string, number> {
    if (!this.#memoryFile) return {};
    try {
      const parsed = JSON.parse(readFileSync(this.#memoryFile, 'utf8')) as unknown;
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, number>) : {};
    } catch {
      return {};
    }
  }

  #remember(option: string, port: number): void {
    if (!this.#memoryFile) return;
    const all = { ...this.#remembered(), [option]: port };
    try {
      writeFileSync(this.#memoryFile, `${JSON.stringify(all, null, 2)}\n`);
    } catch {
      // Not remembering is not worth failing a start.
    }
  }

  /**
   * Calls `listen(port)` and answers what it answers; `listen` answers the bound port in `port`
   * of its result (or the result itself when it is a number). A taken port (`EADDRINUSE`, or a
   * `PortInUseError` from below) is a `PortInUseError` naming the option, unless the option may
   * fall back, in which case `listen(0)` is tried once.
   */
  async bind<T>(
    option: string,
    port: number,
    listen: (port: number) => Promise<T>,
    portOf: (result: T) => number,
  ): Promise<T> {
    let result: T;
    try {
      result = await listen(port);
    } catch (err) {
      if (!isPortInUse(err)) throw err;
      if (!this.#pickFree.has(option) || port === 0) throw this.inUse(option, port);
      result = await this.#fallback(option, port, listen);
      this.notes.push(
        `${option} ${port} is taken by another program; the ${this.#label} takes ${portOf(result)} instead (kept for the next start)`,
      );
      this.#remember(option, portOf(result));
    }
    this.bound[option] = portOf(result);
    return result;
  }

  /** The port this option fell back to last time, if it is free; else any free port. */
  async #fallback<T>(option: string, port: number, listen: (port: number) => Promise<T>): Promise<T> {
    const before = this.#remembered()[option];
    if (typeof before === 'number' && Number.isInteger(before) && before > 0 && before !== port) {
      try {
        return await listen(before);
      } catch (err) {
        if (!isPortInUse(err)) throw err;
      }
    }
    return listen(0);
  }

  /** The error for a taken port of `option`, naming the flag and the variable that change it. */
  inUse(option: string, port: number): PortInUseError {
    return new PortInUseError(
      `port ${port} is already in use; choose another with --${option} or ${envName(this.#service, option)}`,
      option,
    );
  }
}

function isPortInUse(err: unknown): boolean {
  return err instanceof PortInUseError || (err as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';
}
