import { createRequire } from 'node:module';

// src/kernel/version.ts and dist/kernel/version.js both sit two levels below package.json.
const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

/** The Millwright release. */
export const MILLWRIGHT_VERSION: string = pkg.version;
