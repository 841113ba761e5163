#!/usr/bin/env node
// `npm run bench -- <name> [args]` runs bench/<name>.ts (each benchmark compares against its
// baseline in the same run and prints a Markdown table for docs/performance.md).
// `npm run bench -- summary` runs the benches of the performance targets in their short mode
// and prints one table of every ratio (bench/summary.ts); bench/support.ts is not a benchmark.
import { readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';

const [name, ...args] = process.argv.slice(2);
const available = readdirSync('bench')
  .filter((f) => f.endsWith('.ts') && f !== 'support.ts')
  .map((f) => f.slice(0, -3));
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <name>; available: ${available.join(', ')}`);
  process.exit(2);
}
const child = spawn(process.execPath, ['--import', 'tsx', `bench/${name}.ts`, ...args], { stdio: 'inherit' });
child.on('exit', (code) => process.exit(code ?? 1));
