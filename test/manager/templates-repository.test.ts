/**
 * The templates tables on SQLite and PostgreSQL: a composed template's parts are kept with it
 * (migration 0002) and listed with it.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../helpers/postgres.js';
import { templateMigrations } from '../../src/manager/templates/migrations/index.js';
import { TemplateRepository, type TemplateRow } from '../../src/manager/templates/repository.js';

forEachDialect('template repository', (ctx) => {
  let repo: TemplateRepository;
  before(async () => {
    await ctx.database.migrate([templateMigrations]);
    repo = new TemplateRepository(ctx.database);
  });

  test("a composed template's parts are kept and listed", async () => {
    const parts = JSON.stringify([{ id: 'a', friendlyName: 'A', version: 1 }]);
    const row: TemplateRow = {
      id: 'composed',
      friendly_name: 'composed',
      description: '',
      version: 1,
      document: '{}',
      sections: '[]',
      size: 2,
      encrypted: 0,
      user_key: null,
      company_id: null,
      project_id: null,
      source_device_id: null,
      parts,
      created_by: 'test',
      created_at: Date.now(),
      updated_by: 'test',
      updated_at: Date.now(),
    };
    await repo.insert(row);
    assert.equal((await repo.get('composed'))?.parts, parts);
    const page = await repo.list({ offset: 0, limit: 10, sort: [], filter: [] }, null);
    assert.equal(page.items.find((t) => t.id === 'composed')?.parts, parts);
  });
});
