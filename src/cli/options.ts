/** Turns option specs into commander flags, so that flags, variables and file keys never drift apart. */
import { Command, Option } from 'commander';
import { envName, loadConfig, type ConfigValues, type OptionSpec } from '../kernel/config.js';

export function addServiceOptions(cmd: Command, service: string, specs: readonly OptionSpec[]): Command {
  cmd.addOption(
    new Option(
      '--config <file>',
      `JSON config file (keys as the flags below) [${envName(service, 'config')}]`,
    ),
  );
  for (const spec of specs) {
    const env = envName(service, spec.name);
    const shownDefault =
      spec.default !== undefined && !spec.secret ? ` (default: ${String(spec.default)})` : '';
    // A boolean takes `--x`, `--x=false`, `--x false` and `--no-x`; the value is checked with the
    // others (true/false, yes/no, on/off, 1/0), so that a bad one is named like any bad value.
    const flag =
      spec.type === 'bool'
        ? `--${spec.name} [true|false]`
        : `--${spec.name} <${spec.type === 'int' ? 'n' : 'value'}>`;
    const opt = new Option(flag, `${spec.description}${shownDefault} [${env}]`);
    if (spec.values) opt.choices(spec.values as string[]);
    cmd.addOption(opt);
    if (spec.type === 'bool')
      cmd.addOption(new Option(`--no-${spec.name}`, `the same as --${spec.name}=false`));
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
