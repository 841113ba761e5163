/** The instance settings' table: key/value settings. */
import type { Database } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';

export interface SettingsTables {
  mgr_instance_setting: { key: string; value: string };
}

export class InstanceSettingsRepository {
  readonly #settings: SettingsTable;

  constructor(database: Database) {
    this.#settings = new SettingsTable(database.db, 'mgr_instance_setting');
  }

  get(key: string): Promise<string | undefined> {
    return this.#settings.get(key);
  }

  put(key: string, value: string): Promise<void> {
    return this.#settings.put(key, value);
  }
}
