/**
 * The OPC UA module's configuration section: export, validate, diff, merge and apply in the apply's
 * transaction (legacy, use, merge-apply; failFast), on an edge built without listening (the OPC UA
 * server off; a stand-in address space shows what the running server would be told).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEdgeApp, type EdgeShell } from '../../../src/edge/service.js';
import { edgeConfigWith } from '../../../src/edge/service.js';
import type { ApplyMode } from '../../../src/kernel/service/config-section.js';
import {
  opcuaConfigSection,
  type OpcuaConfigSection,
  type OpcuaSection,
} from '../../../src/edge/opcua/config-section.js';
import type { NodeTree } from '../../../src/edge/opcua/tree.js';
import type { OpcuaEvent } from '../../../src/edge/opcua/types.js';

let shell: EdgeShell;
let section: OpcuaConfigSection;
/** Paths of the trees the stand-in address space was told about. */
const reconciled: string[][] = [];
const events: OpcuaEvent[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'mw-opcua-section-'));

before(async () => {
  shell = await buildEdgeApp(
    edgeConfigWith({ dataDir, datahubGateway: false, opcuaEnabled: false, logLevel: 'error' }),
  );
  const service = shell.module('opcua').service;
  section = opcuaConfigSection(service);
  service.attach({ reconcile: (tree: NodeTree) => reconciled.push(paths(tree)) });
  service.onEvent((e) => events.push(e));
});
after(async () => {
  await shell.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const paths = (tree: NodeTree) => [...tree.all()].map((n) => tree.path(n.ref)).sort();

/** Applies `next` in a transaction of the edge's database, as the configuration module does. */
async function apply(next: OpcuaSection, mode: ApplyMode, failFast = true) {
  const after: Array<() => void | Promise<void>> = [];
  const failed: Array<{ item: string; message: string }> = [];
  const progress: string[] = [];
  await shell.database.transaction((trx) =>
    section.apply(next, {
      mode,
      trx,
      failFast,
      fail: (item, message) => failed.push({ item, message }),
      afterCommit: (fn) => after.push(fn),
      progress: (done, total) => progress.push(`${done}/${total}`),
    }),
  );
  const before = await section.export();
  for (const fn of after) await fn();
  return { failed, progress, before };
}

const plant = [
  {
    ID: 'Plant',
    Kind: 'Folder' as const,
    Children: [{ ID: 'level', Kind: 'Tag' as const, Description: 'tank level' }],
  },
];

test('apply replaces the tree and the settings; export gives them back', async () => {
  const current = await section.export();
  assert.deepEqual(current.nodes, []);
  assert.equal(current.settings.allowAnonymous, false);
  const next: OpcuaSection = { settings: { ...current.settings, maxSessions: 12 }, nodes: plant };
  const diff = section.diff(current, next, 'legacy');
  assert.deepEqual(diff, {
    added: ['nodes/Plant', 'nodes/Plant/level'],
    changed: ['settings.maxSessions'],
    removed: [],
    restarts: [],
  });
  const done = await apply(next, 'legacy');
  assert.deepEqual(done.progress, ['1/2', '2/2']);
  assert.deepEqual(done.before.nodes, [], 'the live service waits for the commit');
  const after = await section.export();
  assert.equal(after.settings.maxSessions, 12);
  assert.deepEqual(reconciled.at(-1), ['Plant', 'Plant/level'], 'the address space follows');
  const tree = events.filter((e) => e.type === 'tree').at(-1);
  assert.equal(tree?.type === 'tree' && tree.change.reason, 'Template');
  assert.deepEqual(section.diff(after, next, 'use'), { added: [], changed: [], removed: [], restarts: [] });
  assert.deepEqual(after.nodes, [
    {
      ID: 'Plant',
      Kind: 'Folder',
      Children: [{ ID: 'level', Kind: 'Tag', Description: 'tank level', AccessControl: 'ReadOnly' }],
    },
  ]);
});

test('merge names what it overwrites; merge-apply lays the template over the tree field by field', async () => {
  const current = await section.export();
  const template: OpcuaSection = {
    settings: { allowAnonymous: true } as OpcuaSection['settings'],
    nodes: [
      { ID: 'Plant', Kind: 'Folder', Children: [{ ID: 'level', Kind: 'Tag', AccessControl: 'ReadWrite' }] },
      { ID: 'Line', Kind: 'Folder' },
    ],
  };
  const { merged, overwrites } = section.merge(current, template);
  assert.deepEqual(overwrites, ['settings.allowAnonymous', 'nodes/Plant/level']);
  assert.deepEqual(merged.nodes, [
    {
      ID: 'Plant',
      Kind: 'Folder',
      Children: [{ ID: 'level', Kind: 'Tag', Description: 'tank level', AccessControl: 'ReadWrite' }],
    },
    { ID: 'Line', Kind: 'Folder' },
  ]);
  assert.equal(merged.settings.maxSessions, 12);
  const diff = section.diff(current, template, 'merge-apply');
  assert.deepEqual(diff, {
    added: ['nodes/Line'],
    changed: ['nodes/Plant/level', 'settings.allowAnonymous'],
    removed: [],
    restarts: ['opcua server'],
  });
  // legacy replaces the level tag as a whole (its Description goes) and keeps the rest.
  assert.deepEqual(section.diff(current, template, 'legacy').changed, [
    'nodes/Plant/level',
    'settings.allowAnonymous',
  ]);
  assert.deepEqual(section.diff(current, template, 'legacy').removed, []);
  await apply(template, 'merge-apply');
  const after = await section.export();
  assert.deepEqual(after.nodes, merged.nodes);
  assert.equal(after.settings.allowAnonymous, true);
  // A setting that needs a restart is stored, and pending until the server restarts.
  assert.deepEqual(shell.module('opcua').service.restartPending(), ['allowAnonymous']);
});

test('legacy replaces the nodes it names and keeps the others; use makes the section the template', async () => {
  const current = await section.export();
  await apply(
    {
      settings: {} as OpcuaSection['settings'],
      nodes: [{ ID: 'Line', Kind: 'Folder', Description: 'line 1' }],
    },
    'legacy',
  );
  const legacy = await section.export();
  assert.deepEqual(
    legacy.nodes.map((n) => [n.ID, n.Description]),
    [
      ['Plant', undefined],
      ['Line', 'line 1'],
    ],
  );
  assert.deepEqual(legacy.settings, current.settings, 'settings left out are kept');

  const only: OpcuaSection = {
    settings: { maxSessions: 7 } as OpcuaSection['settings'],
    nodes: [{ ID: 'Line', Kind: 'Folder' }],
  };
  assert.deepEqual(section.diff(legacy, only, 'use').removed, ['nodes/Plant', 'nodes/Plant/level']);
  await apply(only, 'use');
  const used = await section.export();
  assert.deepEqual(used.nodes, [{ ID: 'Line', Kind: 'Folder' }]);
  assert.equal(used.settings.maxSessions, 7);
  assert.equal(used.settings.allowAnonymous, false, 'settings left out take their defaults');
  assert.deepEqual(reconciled.at(-1), ['Line']);
  assert.deepEqual(shell.module('opcua').service.restartPending(), []);
});

test('a failing item: failFast rolls everything back; without it the item is skipped', async () => {
  const current = await section.export();
  const bad: OpcuaSection = {
    settings: { ...current.settings, maxSessions: 99 },
    nodes: [{ ID: 'Cell', Kind: 'Folder', OriginID: 'nope' }],
  };
  await assert.rejects(apply(bad, 'use'), /section opcua: nodes: folder Cell cannot have an OriginID/);
  assert.deepEqual(await section.export(), current, 'nothing of the failed apply stays');
  const { failed } = await apply(bad, 'use', false);
  assert.deepEqual(
    failed.map((f) => f.item),
    ['opcua: nodes'],
  );
  const after = await section.export();
  assert.equal(after.settings.maxSessions, 99);
  assert.deepEqual(after.nodes, current.nodes);
  // A setting the rules refuse (Sign needs a policy other than None).
  const refused: OpcuaSection = {
    settings: { ...after.settings, securityPolicies: ['None'], securityModes: ['Sign'] },
    nodes: after.nodes,
  };
  await assert.rejects(apply(refused, 'legacy'), /section opcua: settings: security modes Sign/);
  assert.deepEqual(await section.export(), after);
});

test('validate names the bad items', async () => {
  assert.deepEqual(await section.validate({ settings: {}, nodes: plant }), []);
  const issues = await section.validate({
    settings: { maxSessions: 0, securityPolicies: ['Basic128Rsa15'], colour: 'red' },
    nodes: [
      { ID: 'A', Kind: 'Folder' },
      { ID: 'A', Kind: 'Folder' },
    ],
  });
  assert.deepEqual(
    issues.map((i) => i.path),
    ['settings.colour', 'settings.maxSessions', 'settings.securityPolicies', 'nodes'],
  );
  assert.match(issues[3]!.message, /two nodes under the top level have ID "A"/);
});
