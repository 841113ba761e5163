/** Turns option specs into commander flags, so that flags, variables and file keys never drift apart. */
import { Command, Option } from 'commander';
import { envName, loadConfig, type ConfigValues, type OptionSpec } from '../kernel/config.js';

export function addServiceOptions(
  cmd: Command,
  service: string,
  specs: readonly OptionSpec[],
  /** For a service beside another (`up`): its flags are `--<prefix><name>`, without `--config`. */
  prefix = '',
): Command {
  if (!prefix)
    cmd.addOption(
      new Option(
        '--config <file>',
        `JSON config file (keys as the flags below) [${envName(service, 'config')}]`,
      ),
    );
  for (const spec of specs) {
    const env = envName(service, spec.name);
    const shownDefault =
      spec.default !== undefined && spec.default !== '' && !spec.secret
        ? ` (default: ${String(spec.default)})`
        : '';
    // A boolean takes `--x`, `--x=false`, `--x false` and `--no-x`; the value is checked with the
    // others (true/false, yes/no, on/off, 1/0), so that a bad one is named like any bad value.
    const flag =
      spec.type === 'bool'
        ? `--${prefix}${spec.name} [true|false]`
        : `--${prefix}${spec.name} <${spec.type === 'int' ? 'n' : 'value'}>`;
    // Under a prefix (`up --uns-tls-key`), a description naming another option of the service
    // names it with the prefix (`PEM private key of --uns-tls-cert`).
    const names = new Set(specs.map((x) => x.name));
    const description = prefix
      ? spec.description.replace(/--([a-z][a-z0-9-]*)/g, (m, n: string) =>
          names.has(n) ? `--${prefix}${n}` : m,
        )
      : spec.description;
    const opt = new Option(flag, `${description}${shownDefault} [${env}]`);
    if (spec.values) opt.choices(spec.values as string[]);
    // `--help` lists the options under their owner: the service's shell, then each module.
    const heading = spec.group ? `${spec.group[0]!.toUpperCase()}${spec.group.slice(1)}:` : undefined;
    if (heading) opt.helpGroup(heading);
    cmd.addOption(opt);
    if (spec.type === 'bool') {
      const no = new Option(`--no-${prefix}${spec.name}`, `the same as --${prefix}${spec.name}=false`);
      if (heading) no.helpGroup(heading);
      cmd.addOption(no);
    }
  }
  return cmd;
}

/** The validated options of `service` from a command's parsed flags, the environment and the file. */
export function resolveOptions(
  cmd: Command,
  service: string,
  specs: readonly OptionSpec[],
  sources?: Record<string, 'flag' | 'env' | 'file' | 'default'>,
): ConfigValues {
  const raw = cmd.opts() as Record<string, unknown>;
  return loadConfig(service, specs, raw, process.env, sources);
}

/** The flags of a prefixed service (`--uns-port` → `port`), keyed by option name, for loadConfig. */
export function prefixedFlags(
  cmd: Command,
  specs: readonly OptionSpec[],
  prefix: string,
): Record<string, unknown> {
  const raw = cmd.opts() as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const spec of specs) {
    const camel = `${prefix}${spec.name}`.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (raw[camel] !== undefined) out[spec.name] = raw[camel];
  }
  return out;
}
