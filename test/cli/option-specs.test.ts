/**
 * The light option lists (src/<service>/option-specs.ts, read by the CLI's help and usage errors
 * without loading the modules) are the services' own: the same specs, in the same order, as
 * `serviceOptionSpecs` of each service's definition with its modules. The same for the migration
 * lists (src/<service>/migration-list.ts, the CLI's offline commands' stores).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serviceOptionSpecs } from '../../src/kernel/service/index.js';
import { EDGE_SERVICE } from '../../src/edge/service.js';
import { UNS_SERVICE } from '../../src/uns/service.js';
import { MANAGER_SERVICE } from '../../src/manager/service.js';
import { EDGE_OPTIONS } from '../../src/edge/option-specs.js';
import { UNS_OPTIONS } from '../../src/uns/option-specs.js';
import { MANAGER_OPTIONS } from '../../src/manager/option-specs.js';
import { EDGE_MIGRATIONS } from '../../src/edge/migration-list.js';
import { UNS_MIGRATIONS } from '../../src/uns/migration-list.js';
import { MANAGER_MIGRATIONS } from '../../src/manager/migration-list.js';

for (const [name, light, definition] of [
  ['edge', EDGE_OPTIONS, EDGE_SERVICE],
  ['uns', UNS_OPTIONS, UNS_SERVICE],
  ['manager', MANAGER_OPTIONS, MANAGER_SERVICE],
] as const) {
  test(`${name}: option-specs.ts lists the options of the service's modules`, () => {
    assert.deepEqual(light, serviceOptionSpecs(definition));
  });
}

for (const [name, light, definition] of [
  ['edge', EDGE_MIGRATIONS, EDGE_SERVICE],
  ['uns', UNS_MIGRATIONS, UNS_SERVICE],
  ['manager', MANAGER_MIGRATIONS, MANAGER_SERVICE],
] as const) {
  test(`${name}: migration-list.ts lists the migrations of the service's modules, in their order`, () => {
    const own = definition.modules.flatMap((m) => (m.migrations ? [m.migrations] : []));
    assert.equal(light.length, own.length);
    for (const [i, m] of own.entries()) assert.equal(light[i], m, `${m.module} at ${i}`);
  });
}
