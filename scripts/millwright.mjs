#!/usr/bin/env node
// `npm run millwright -- <command>`: the CLI from a clone. It builds `dist/` only when a file
// under src/ (or the build's configuration) is newer than the last build, so a second call starts
// at once; then it runs `node dist/cli/main.js <command>` with the same exit code.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const entry = join(root, 'dist/cli/main.js');
// tsc's incremental build leaves unchanged outputs untouched: the build's time is kept in a stamp.
const stamp = join(root, 'dist/.millwright-built');

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const name of readdirSync(path)) max = Math.max(max, newest(join(path, name)));
  return max;
}

let builtAt = 0;
try {
  statSync(entry);
  builtAt = statSync(stamp).mtimeMs;
} catch {
  builtAt = 0;
}
const sourcesAt = Math.max(
  newest(join(root, 'src')),
  newest(join(root, 'tsconfig.json')),
  newest(join(root, 'tsconfig.build.json')),
  newest(join(root, 'package.json')),
);
if (builtAt < sourcesAt) {
  process.stderr.write('millwright: building dist/ (once; again only after a source change)\n');
  const startedAt = new Date();
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: ['ignore', 2, 2] });
  writeFileSync(stamp, `${startedAt.toISOString()}\n`);
  utimesSync(stamp, startedAt, startedAt); // a source saved during the build builds again
}

const child = spawn(process.execPath, [entry, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
