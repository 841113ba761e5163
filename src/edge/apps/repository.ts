/** The applications module's table: the container registries (`app_registry`), passwords sealed. */
import type { Kysely } from '../../kernel/db/index.js';

export interface RegistryRow {
  id: string;
  name: string;
  type: string;
  url: string;
  username: string;
  password_sealed: string | null;
  region: string;
  created_at: number;
  updated_at: number;
}

export interface AppsTables {
  app_registry: RegistryRow;
}

const fix = (r: RegistryRow): RegistryRow => ({
  ...r,
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
});

export class RegistryRepository {
  constructor(private readonly db: Kysely<AppsTables>) {}

  async list(): Promise<RegistryRow[]> {
    return (await this.db.selectFrom('app_registry').selectAll().orderBy('name').execute()).map(fix);
  }

  async count(): Promise<number> {
    const r = await this.db
      .selectFrom('app_registry')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async get(id: string): Promise<RegistryRow | undefined> {
    const r = await this.db.selectFrom('app_registry').selectAll().where('id', '=', id).executeTakeFirst();
    return r && fix(r);
  }

  async byName(name: string): Promise<RegistryRow | undefined> {
    const r = await this.db
      .selectFrom('app_registry')
      .selectAll()
      .where('name', '=', name)
      .executeTakeFirst();
    return r && fix(r);
  }

  async insert(row: RegistryRow): Promise<void> {
    await this.db.insertInto('app_registry').values(row).execute();
  }

  async update(row: RegistryRow): Promise<void> {
    const { id, ...rest } = row;
    await this.db.updateTable('app_registry').set(rest).where('id', '=', id).execute();
  }

  async remove(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('app_registry').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
