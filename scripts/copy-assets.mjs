#!/usr/bin/env node
// Part of `npm run build`: tsc compiles src/ to dist/; the files it does not compile but the code
// reads at run time (GraphQL schemas) are copied beside the compiled modules.
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ASSETS = ['.graphql'];

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (ASSETS.some((ext) => name.endsWith(ext))) {
      const target = join('dist', relative('src', p));
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(p, target);
    }
  }
}
walk('src');
