/**
 * What the benches share: which build a run measured, the short mode of `npm run bench -- summary`,
 * and the figures a bench hands to the summary.
 *
 * - `measuredBuild()`: the `Measured:` line (issue 34: figures that did not hold had been taken
 *   from another build than the one recorded). A bench that starts `millwright` runs the built
 *   service in dist/ (`CLI_ARGS`, rebuilt when a source is newer); one that runs the code in its
 *   own process runs the sources through tsx. Either way: the commit, and whether src/ had
 *   changes not committed.
 * - `SHORT`: `--short`, the bench's quick mode for `bench/summary` (fewer rounds, shorter windows,
 *   the summary's figures only); each bench says in its header what `--short` leaves out.
 * - `reportFigures(figures)`: prints the `Measured:` line and, when run by `bench/summary`
 *   (`MILLWRIGHT_BENCH_FIGURES` names a file), writes the figures there as JSON.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { CLI_ARGS } from '../test/helpers/cli.js';

export const SHORT = process.argv.includes('--short');

/** `--name value` as a number, or `dflt` (`short` in short mode when given). */
export function numArg(name: string, dflt: number, short?: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i > 0) return Number(process.argv[i + 1]);
  return SHORT && short !== undefined ? short : dflt;
}

function git(...args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

/** The commit of the tree (short hash), and whether src/ has changes not committed. */
export function treeCommit(): string {
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown commit';
  const dirty = git('status', '--porcelain', '--', 'src') !== '';
  return `commit ${commit}${dirty ? ' with uncommitted changes in src/' : ''}`;
}

/**
 * Which build was measured: `built` for a service started as its own process from dist/,
 * `sources` for code run in the bench's process from src/ through tsx.
 */
export function measuredBuild(kind: 'built' | 'sources' = 'built'): string {
  if (kind === 'sources') return `the sources (src/ through tsx, in the bench's process), ${treeCommit()}`;
  // Another build's dist/ (an A/B): run as it is, so the tree's commit does not name it.
  if (process.env.MILLWRIGHT_CLI_DIST)
    return `the built service (${CLI_ARGS.join(' ')}, chosen by MILLWRIGHT_CLI_DIST, run as it is: its commit is the one it was built from, not this tree's ${treeCommit().replace(/^commit /, '')})`;
  return `the built service (${CLI_ARGS.join(' ')}), ${treeCommit()}, rebuilt from the sources when they were newer`;
}

export type Figures = Record<string, number | string | boolean>;

/**
 * The end of a bench: the `Measured:` line, and its figures for `bench/summary` (numbers in the
 * units their names say: `…Ms`, `…MiB`, `…PerSecond`, shares as fractions).
 */
export function reportFigures(figures: Figures, kind: 'built' | 'sources' = 'built'): void {
  console.log(`Measured: ${measuredBuild(kind)}`);
  const file = process.env.MILLWRIGHT_BENCH_FIGURES;
  if (file) writeFileSync(file, JSON.stringify({ ...figures, measured: measuredBuild(kind) }));
}
