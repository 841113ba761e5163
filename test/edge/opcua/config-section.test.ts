/**
 * The OPC UA module's configuration section: export, validate, diff and apply (replace and
 * merge-apply), on an edge built without listening (the OPC UA server off).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEdgeApp, type EdgeShell } from '../../../src/edge/service.js';
import { edgeConfigWith } from '../../../src/edge/options.js';
import {
  opcuaConfigSection,
  type OpcuaSection,
  type OpcuaSectionDraft,
} from '../../../src/edge/opcua/config-section.js';

let shell: EdgeShell;
let section: OpcuaSectionDraft;
const dataDir = mkdtempSync(join(tmpdir(), 'mw-opcua-section-'));

before(async () => {
  shell = await buildEdgeApp(
    edgeConfigWith({ dataDir, datahubGateway: false, opcuaEnabled: false, logLevel: 'error' }),
  );
  section = opcuaConfigSection(shell.module('opcua').service);
});
after(async () => {
  await shell.close();
  rmSync(dataDir, { recursive: true, force: true });
});

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
  await section.apply(next, 'legacy');
  const after = await section.export();
  assert.equal(after.settings.maxSessions, 12);
  assert.deepEqual(after.nodes, [
    {
      ID: 'Plant',
      Kind: 'Folder',
      Children: [{ ID: 'level', Kind: 'Tag', Description: 'tank level', AccessControl: 'ReadOnly' }],
    },
  ]);
});

test('merge-apply lays the template over the tree; a security setting names the restart', async () => {
  const current = await section.export();
  const next: OpcuaSection = {
    settings: { ...current.settings, allowAnonymous: true },
    nodes: [{ ID: 'Line', Kind: 'Folder' }],
  };
  const diff = section.diff(current, next, 'merge-apply');
  assert.deepEqual(diff.added, ['nodes/Line']);
  assert.deepEqual(diff.removed, []);
  assert.deepEqual(diff.restarts, ['opcua server']);
  assert.deepEqual(section.diff(current, next, 'legacy').removed, ['nodes/Plant', 'nodes/Plant/level']);
  await section.apply(next, 'merge-apply');
  const after = await section.export();
  assert.deepEqual(
    after.nodes.map((n) => n.ID),
    ['Plant', 'Line'],
  );
  assert.equal(after.settings.allowAnonymous, true);
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
