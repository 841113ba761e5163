/** The log forwarding module's table: its configuration and its position in the log store. */
import type { Db } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';
import type { ForwardingConfig } from './config.js';

const TABLE = 'log_forwarding_setting';

export class LogForwardingRepository {
  readonly #settings: SettingsTable;
  constructor(db: Db) {
    this.#settings = new SettingsTable(db, TABLE);
  }

  /** The repository over `trx` (a configuration apply's transaction). */
  static over(trx: Db): LogForwardingRepository {
    return new LogForwardingRepository(trx);
  }

  async config(): Promise<ForwardingConfig | undefined> {
    const text = await this.#settings.get('config');
    return text === undefined ? undefined : (JSON.parse(text) as ForwardingConfig);
  }

  putConfig(config: ForwardingConfig): Promise<void> {
    return this.#settings.put('config', JSON.stringify(config));
  }

  /** The time (µs) of the newest log entry already taken into the queue, if forwarding ever ran. */
  async cursor(): Promise<number | undefined> {
    const text = await this.#settings.get('cursor');
    return text === undefined ? undefined : Number(text);
  }

  putCursor(micros: number): Promise<void> {
    return this.#settings.put('cursor', String(micros));
  }
}
