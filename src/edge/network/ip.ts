/**
 * The system's own network tool, `ip` of iproute2, run without a shell: JSON output (`-j`) for
 * reading, and the route commands for deleting. Output is bounded (`MAX_OUTPUT`) and every run has
 * a timeout, so a machine with a huge routing table cannot grow the edge's memory without bound.
 */
import { execFile } from 'node:child_process';

/** Most bytes of output read from one `ip` run (a larger table fails the request, it is not cut). */
export const MAX_OUTPUT = 16 * 1024 * 1024;
/** Longest one `ip` run may take. */
export const IP_TIMEOUT_MS = 10_000;

export interface IpRun {
  /** Exit code; null when the command could not run. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** The `ip` binary is not installed (ENOENT). */
  missing: boolean;
}

/** Runs `ip <args>` (the binary from PATH, or `command`). */
export function runIp(args: readonly string[], command = 'ip'): Promise<IpRun> {
  return new Promise((resolve) => {
    execFile(
      command,
      [...args],
      {
        timeout: IP_TIMEOUT_MS,
        maxBuffer: MAX_OUTPUT,
        encoding: 'utf8',
        env: { ...process.env, LC_ALL: 'C' },
      },
      (err, stdout, stderr) => {
        if (!err) return resolve({ code: 0, stdout, stderr, missing: false });
        const e = err as NodeJS.ErrnoException & { code?: string | number };
        const missing = e.code === 'ENOENT';
        resolve({
          code: typeof e.code === 'number' ? e.code : null,
          stdout: stdout ?? '',
          stderr: stderr || e.message,
          missing,
        });
      },
    );
  });
}

/** `ip -j ...` output as an array of objects (empty output is an empty list). */
export function parseJsonArray(text: string): Record<string, unknown>[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  const parsed: unknown = JSON.parse(trimmed);
  if (!Array.isArray(parsed)) throw new Error('ip -j did not answer a JSON array');
  return parsed.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object');
}
