/**
 * Log forwarding's section of a configuration template, one object (not a keyed collection):
 *
 *     { "logForwarding": { "enabled", "target": { ..., "tls": { ..., "key": { "$secret" } },
 *                                                 "headers": { "<name>": { "$secret" } } } | null,
 *                          "filters": { "level", "components" } } }
 *
 * The TLS private key and the HTTP header values are secrets: `{ "$secret": ... }`, sealed under
 * the encryption key when the template leaves the edge, left out without one. A secret the
 * template leaves out keeps the edge's current value. Every mode replaces the whole object
 * (`merge-apply` too: the template's configuration wins); the forwarder follows after the commit.
 */
import { Value } from '@sinclair/typebox/value';
import type {
  ApplyMode,
  ConfigSection,
  SecretValue,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/config-section.js';
import { isSecretValue } from '../../kernel/service/config-section.js';
import { canonical } from '../../kernel/service/section-shape.js';
import { configIssues, mapSecrets, type ForwardingConfig } from './config.js';
import { LogForwardingRepository } from './repository.js';
import { ConfigBody } from './schemas.js';
import { withDefaults, type LogForwardingService } from './service.js';

const NAME = 'logForwarding';

/** The section as a template holds it: secrets as `{ "$secret" }`. */
export type LogForwardingSection = Record<string, unknown>;

/** `section` with its `{ "$secret" }` values as plain text, and where a plain text stood for a secret. */
function unwrap(section: unknown): { config: unknown; plainSecrets: string[] } {
  const plainSecrets: string[] = [];
  if (!section || typeof section !== 'object') return { config: section, plainSecrets };
  const copy = structuredClone(section) as { target?: Record<string, unknown> | null };
  const t = copy.target;
  if (t && typeof t === 'object') {
    const tls = t.tls as Record<string, unknown> | undefined;
    if (tls && tls.key !== undefined) {
      if (isSecretValue(tls.key)) tls.key = tls.key.$secret;
      else plainSecrets.push('target.tls.key');
    }
    const headers = t.headers as Record<string, unknown> | undefined;
    if (headers && typeof headers === 'object')
      for (const [k, v] of Object.entries(headers)) {
        if (isSecretValue(v)) headers[k] = v.$secret;
        else plainSecrets.push(`target.headers.${k}`);
      }
  }
  return { config: copy, plainSecrets };
}

export class LogForwardingConfigSection implements ConfigSection<LogForwardingSection> {
  readonly name = NAME;
  constructor(private readonly service: LogForwardingService) {}

  async export(): Promise<LogForwardingSection> {
    const secret = (v: string): SecretValue => ({ $secret: v });
    // Built with strings first, then the secrets wrapped: the section's own JSON shape.
    const marker = '\u0000secret\u0000';
    const text = JSON.stringify(mapSecrets(this.service.forwarder.config, (v) => `${marker}${v}`));
    return JSON.parse(text, (_k, v: unknown) =>
      typeof v === 'string' && v.startsWith(marker) ? secret(v.slice(marker.length)) : v,
    ) as LogForwardingSection;
  }

  validate(doc: unknown): SectionIssue[] {
    const { config, plainSecrets } = unwrap(doc);
    const issues: SectionIssue[] = plainSecrets.map((path) => ({
      path,
      message: 'a secret: give it as {"$secret": "..."}, never in clear text',
    }));
    if (!Value.Check(ConfigBody, config)) {
      for (const e of Value.Errors(ConfigBody, config))
        issues.push({ path: e.path.replace(/^\//, '').replace(/\//g, '.'), message: e.message });
      return issues;
    }
    return [...issues, ...configIssues(withDefaults(config as Partial<ForwardingConfig>))];
  }

  diff(current: LogForwardingSection, next: LogForwardingSection, _mode: ApplyMode): SectionDiff {
    const same = canonical(current) === canonical(next);
    return { added: [], changed: same ? [] : [NAME], removed: [], restarts: same ? [] : ['log forwarding'] };
  }

  merge(current: LogForwardingSection, template: LogForwardingSection) {
    return { merged: template, overwrites: canonical(current) === canonical(template) ? [] : [NAME] };
  }

  async apply(next: LogForwardingSection, ctx: SectionApplyContext): Promise<void> {
    const previous = this.service.forwarder.config;
    const given = withDefaults(unwrap(next).config as Partial<ForwardingConfig>);
    const config = keepLeftOut(given, previous);
    await new LogForwardingRepository(ctx.trx).putConfig(config);
    ctx.afterCommit(() => this.service.applied(config));
  }
}

/** Secrets the template left out (exported without an encryption key) keep the current values. */
function keepLeftOut(next: ForwardingConfig, previous: ForwardingConfig): ForwardingConfig {
  const t = next.target;
  const old = previous.target;
  if (!t || !old) return next;
  const target = { ...t };
  if (t.tls && t.tls.cert !== undefined && t.tls.key === undefined && old.tls?.key !== undefined)
    target.tls = { ...t.tls, key: old.tls.key };
  if (target.type === 'http' && old.type === 'http' && old.headers)
    target.headers = { ...old.headers, ...(target.headers ?? {}) };
  return { ...next, target };
}
