/** The catalogue as data: consistent, stable, and every default valid under its own rules. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DRIVERS, driverId, findDriverByIdOrName } from '../../../src/edge/devicehub/catalogue/index.js';
import { checkValue } from '../../../src/edge/devicehub/validation.js';

test('every default satisfies its own property definition', () => {
  for (const d of DRIVERS) {
    const all = [
      ...d.properties.map((p) => [d.name, p] as const),
      ...d.registers.flatMap((r) => r.properties.map((p) => [`${d.name}/${r.name}`, p] as const)),
    ];
    for (const [where, p] of all) {
      if (p.default === undefined) continue;
      const checked = checkValue(p, p.default);
      assert.ok(
        'value' in checked,
        `${where}.${p.name}: default ${p.default} refused: ${JSON.stringify(checked)}`,
      );
    }
  }
});

test('names are unique per driver; registers have value types; address ranges are sane', () => {
  for (const d of DRIVERS) {
    assert.equal(new Set(d.properties.map((p) => p.name)).size, d.properties.length, d.name);
    assert.equal(new Set(d.registers.map((r) => r.name)).size, d.registers.length, d.name);
    assert.ok(d.registers.length > 0, d.name);
    for (const r of d.registers) {
      assert.ok(r.valueTypes.length > 0, `${d.name}/${r.name}`);
      assert.equal(new Set(r.properties.map((p) => p.name)).size, r.properties.length, `${d.name}/${r.name}`);
      if (r.addressMin !== undefined) assert.ok(r.addressMin <= r.addressMax!, `${d.name}/${r.name}`);
    }
  }
});

test('driver IDs are stable UUIDs derived from fixed keys', () => {
  assert.equal(driverId('generator'), findDriverByIdOrName('Generator')!.id);
  assert.equal(findDriverByIdOrName('Generator')!.id, 'e1d2f992-9ab9-5468-8a57-3d0f5a770f16');
  for (const d of DRIVERS)
    assert.match(d.id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(findDriverByIdOrName('modbus tcp')?.name, 'Modbus TCP');
});
