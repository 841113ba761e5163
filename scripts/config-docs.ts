// `npm run docs:config`: rewrites the option tables of docs/configuration.md from the option
// schemas (src/cli/config-docs.ts), formatted as `npm run format` would. `--check` only compares.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import { renderConfigurationPage } from '../src/cli/config-docs.js';

export const CONFIGURATION_PAGE = join(import.meta.dirname, '../docs/configuration.md');

/** The page as the schemas make it, formatted by prettier with the project's settings. */
export async function expectedConfigurationPage(): Promise<string> {
  const current = readFileSync(CONFIGURATION_PAGE, 'utf8');
  const options = (await prettier.resolveConfig(CONFIGURATION_PAGE)) ?? {};
  return prettier.format(renderConfigurationPage(current), { ...options, filepath: CONFIGURATION_PAGE });
}

if (process.argv[1] === import.meta.filename) {
  const expected = await expectedConfigurationPage();
  const current = readFileSync(CONFIGURATION_PAGE, 'utf8');
  if (process.argv.includes('--check')) {
    if (expected !== current) {
      console.error('docs/configuration.md differs from the option schemas: run `npm run docs:config`');
      process.exit(1);
    }
  } else if (expected !== current) {
    writeFileSync(CONFIGURATION_PAGE, expected);
    console.log('docs/configuration.md: option tables rewritten');
  } else console.log('docs/configuration.md: up to date');
}
