/**
 * Log forwarding's rules: reading and setting the configuration (secrets masked on reads and kept
 * when an update sends the mask back), starting and stopping, the status. The runtime is
 * `Forwarder`; this class is what the routes and the configuration section call. No HTTP.
 */
import { badRequest, conflict } from '../../kernel/errors.js';
import { DEFAULT_CONFIG, configIssues, keepSecrets, masked, type ForwardingConfig } from './config.js';
import type { Forwarder, ForwardingStatus } from './forwarder.js';
import type { LogForwardingRepository } from './repository.js';

export class LogForwardingService {
  constructor(
    readonly repo: LogForwardingRepository,
    readonly forwarder: Forwarder,
  ) {}

  /** The configuration in force, secrets masked. */
  config(): ForwardingConfig {
    return masked(this.forwarder.config);
  }

  /** Replaces the configuration (a 400 naming the field when it is not valid); answers it masked. */
  async setConfig(next: ForwardingConfig): Promise<ForwardingConfig> {
    const config = keepSecrets(withDefaults(next), this.forwarder.config);
    const issues = configIssues(config);
    if (issues.length > 0)
      throw badRequest(issues.map((i) => `${i.path}: ${i.message}`).join('; '), { issues });
    await this.repo.putConfig(config);
    await this.applied(config);
    return masked(config);
  }

  /** The runtime follows a committed configuration (after `setConfig` or a template's apply). */
  async applied(config: ForwardingConfig): Promise<void> {
    const fresh = config.enabled && !this.forwarder.config.enabled;
    await this.forwarder.reconfigure(config, fresh);
  }

  async start(): Promise<ForwardingStatus> {
    const config = this.forwarder.config;
    if (!config.target)
      throw conflict('no log forwarding target is configured: PUT /dm/v2/log-forwarding/config first');
    if (!config.enabled) {
      const next = { ...config, enabled: true };
      await this.repo.putConfig(next);
      await this.applied(next);
    }
    return this.forwarder.status();
  }

  async stop(): Promise<ForwardingStatus> {
    const config = this.forwarder.config;
    if (config.enabled) {
      const next = { ...config, enabled: false };
      await this.repo.putConfig(next);
      await this.applied(next);
    }
    return this.forwarder.status();
  }

  status(): ForwardingStatus {
    return this.forwarder.status();
  }

  close(): Promise<void> {
    return this.forwarder.close();
  }
}

/** `config` with the defaults of what it leaves out. */
export function withDefaults(config: Partial<ForwardingConfig>): ForwardingConfig {
  return {
    enabled: config.enabled ?? DEFAULT_CONFIG.enabled,
    target: config.target ?? null,
    filters: {
      level: config.filters?.level ?? DEFAULT_CONFIG.filters.level,
      components: config.filters?.components ?? [],
    },
  };
}
