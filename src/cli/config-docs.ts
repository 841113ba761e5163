/**
 * The option tables of `docs/configuration.md`, generated from the option schemas (the shell's
 * and each module's), so that the page lists every option with its flag, variable, default and
 * range. `npm run docs:config` rewrites the blocks between `<!-- options:<service> -->` and
 * `<!-- /options:<service> -->`; a test fails when the page and the schemas differ.
 */
import { homedir } from 'node:os';
import { envName, type OptionSpec } from '../kernel/config.js';
// The light option lists (no module loaded), equal to the services' own (test/cli/option-specs.test.ts).
import { EDGE_OPTIONS } from '../edge/option-specs.js';
import { UNS_OPTIONS } from '../uns/option-specs.js';
import { MANAGER_OPTIONS } from '../manager/option-specs.js';

/** The services whose options the page lists, by the name of their block. */
export const DOCUMENTED_SERVICES: readonly { service: string; specs: readonly OptionSpec[] }[] = [
  { service: 'edge', specs: EDGE_OPTIONS },
  { service: 'uns', specs: UNS_OPTIONS },
  { service: 'manager', specs: MANAGER_OPTIONS },
];

function shownDefault(spec: OptionSpec): string {
  if (spec.default === undefined || spec.default === '') return '';
  let text = String(spec.default);
  const home = homedir();
  if (spec.type === 'path' && text.startsWith(home)) text = `~${text.slice(home.length)}`;
  return `\`${text}\``;
}

function meaning(spec: OptionSpec): string {
  let text = spec.description;
  if (spec.type === 'int' && spec.min !== undefined && spec.max !== undefined)
    text += ` (${spec.min} to ${spec.max})`;
  if (spec.type === 'enum' && spec.values) text += ` (${spec.values.map((v) => `\`${v}\``).join(', ')})`;
  if (spec.type === 'bool') text += ' (true or false)';
  if (spec.secret) text += '; secret: never logged';
  return text.replace(/\|/g, '\\|');
}

/** The tables of one service: one per group (the shell, then each module with options). */
export function optionTables(service: string, specs: readonly OptionSpec[]): string {
  const groups = new Map<string, OptionSpec[]>();
  for (const spec of specs) {
    const group = spec.group ?? service;
    let list = groups.get(group);
    if (!list) groups.set(group, (list = []));
    list.push(spec);
  }
  const out: string[] = [];
  for (const [group, list] of groups) {
    out.push(`#### ${group[0]!.toUpperCase()}${group.slice(1)}`, '');
    out.push('| flag | environment | default | meaning |', '| --- | --- | --- | --- |');
    for (const spec of list) {
      out.push(
        `| \`--${spec.name}\` | \`${envName(service, spec.name)}\` | ${shownDefault(spec)} | ${meaning(spec)} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}

/** `page` with each service's block replaced by the tables of its current options. */
export function renderConfigurationPage(page: string, services = DOCUMENTED_SERVICES): string {
  let out = page;
  for (const { service, specs } of services) {
    const open = `<!-- options:${service} -->`;
    const close = `<!-- /options:${service} -->`;
    const start = out.indexOf(open);
    const end = out.indexOf(close);
    if (start < 0 || end < start) throw new Error(`docs/configuration.md has no block ${open} ... ${close}`);
    out = `${out.slice(0, start + open.length)}\n\n${optionTables(service, specs)}\n${out.slice(end)}`;
  }
  return out;
}
