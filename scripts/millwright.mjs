#!/usr/bin/env node
// `npm run millwright -- <command>`: the CLI from a clone. It builds `dist/` only when a file
// under src/ (or the build's configuration) is newer than the last build (scripts/build.mjs), so
// a second call starts at once; then it runs `node dist/cli/main.js <command>` with the same exit
// code.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { build } from './build.mjs';

const entry = join(import.meta.dirname, '..', 'dist/cli/main.js');
try {
  // The build's output goes to stderr: stdout is the command's own.
  build({
    ifChanged: true,
    onBuild: () =>
      process.stderr.write('millwright: building dist/ (once; again only after a source change)\n'),
    stdio: ['ignore', 2, 2],
  });
} catch (err) {
  process.exit(typeof err?.status === 'number' ? err.status : 1);
}

const child = spawn(process.execPath, [entry, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
