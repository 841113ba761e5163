/**
 * `/opcua/v2` over GraphQL: sync (GetCurrentSync after a finished sync, states of nodes whose
 * origin changed or went away, auto-sync), the node reads (GetNodesByRef, GetFolderItems,
 * GetChildFolders(Page), GetFolderSkeleton, SearchNodes), colliding IDs addressed by reference and
 * by originId, expectedVersion conflicts, uploads with their counts, the staged upload (commit,
 * cancel, invisible to OPC UA clients until committed), settings, users, and the three
 * subscriptions over the GraphQL WebSocket.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusCodes } from 'node-opcua';
import {
  NODE_FIELDS,
  openSession,
  OPERATOR,
  startUaEdge,
  uaSubscriptions,
  type UaEdge,
} from '../edge/opcua/support.js';
import { eventually, sleep } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

describe('OPC UA server over GraphQL (/opcua/v2)', () => {
  let e: UaEdge;
  let dev1: string;
  let dev2: string;
  let temp1: string | undefined;
  let temp2: string | undefined;
  let subs: Awaited<ReturnType<typeof uaSubscriptions>>;

  const nodesById = async (ids: string[]) =>
    (await e.ua(`query($ids: [String!]) { GetNodes(IDs: $ids) { ${NODE_FIELDS} } }`, { ids })).GetNodes;
  const byPath = async (path: string) => {
    const all = await nodesById([path.split('/').pop()!]);
    const hit = all.find((n: any) => n.Path === path);
    assert.ok(hit, `node ${path}`);
    return hit;
  };
  const errorOf = async (query: string, variables?: Record<string, unknown>) => {
    const r = await e.uaRaw(query, variables);
    assert.ok(r.body.errors, `expected an error: ${r.text}`);
    return r.body.errors[0];
  };

  before(async () => {
    e = await startUaEdge();
    await e.ua(`mutation($in: SetUserRequest!) { SetUser(input: $in) { Username } }`, {
      in: { Username: OPERATOR.userName, Password: OPERATOR.password },
    });
    dev1 = await e.createDevice('line1', 'Generator');
    dev2 = await e.createDevice('line2', 'Generator');
    [temp1] = await e.createTags(dev1, [
      { Name: 'S', TagName: 'temp', ValueType: 'float64', IntervalMs: 1000, Properties: { address: '0' } },
      { Name: 'S', TagName: 'speed', ValueType: 'float64', IntervalMs: 1000, Properties: { address: '0' } },
    ]);
    [temp2] = await e.createTags(dev2, [
      { Name: 'S', TagName: 'temp', ValueType: 'float64', IntervalMs: 1000, Properties: { address: '0' } },
    ]);
    subs = await uaSubscriptions(e);
  });
  after(async () => {
    subs?.close();
    await e?.stop();
  });

  test('GetCurrentSync is null before any sync, the finished run after one; SubscribeSyncStatus sees it', async () => {
    assert.equal((await e.ua(`{ GetCurrentSync { ID } }`)).GetCurrentSync, null);
    const events = subs.subscribe(`subscription { SubscribeSyncStatus { ID State Added } }`);
    const tree = subs.subscribe(`subscription { SubscribeTreeChanged { Reason Added Removed Modified } }`);
    // graphql-transport-ws does not acknowledge a subscribe: the subscriptions get time to start.
    await sleep(300);
    const run = await e.sync();
    assert.equal(run.State, 'Succeeded');
    assert.deepEqual([run.Added, run.Removed, run.Modified], [6, 0, 0]); // folder, 2 devices, 3 tags
    const again = await e.ua(`{ GetCurrentSync { ID State Added } GetSyncStatus { AutoSync Running
      LastSync { ID State } Nodes { Synced Local Pending Orphaned Failed } } }`);
    assert.equal(again.GetCurrentSync.ID, run.ID);
    assert.equal(again.GetCurrentSync.State, 'Succeeded', 'a terminal run, not a running one');
    assert.equal(again.GetSyncStatus.Running, false);
    assert.equal(again.GetSyncStatus.AutoSync, false);
    assert.equal(again.GetSyncStatus.LastSync.ID, run.ID);
    assert.deepEqual(again.GetSyncStatus.Nodes, { Synced: 6, Local: 0, Pending: 0, Orphaned: 0, Failed: 0 });
    await eventually(() => {
      const states = events.map((p) => p.data.SubscribeSyncStatus).filter((s) => s.ID === run.ID);
      assert.deepEqual(
        states.map((s) => s.State),
        ['Running', 'Succeeded'],
      );
      assert.equal(states[1].Added, 6);
      return true;
    }, 5000);
    await eventually(() => {
      const t = tree.map((p) => p.data.SubscribeTreeChanged).find((c) => c.Reason === 'Sync');
      assert.equal(t?.Added.length, 6);
      return true;
    }, 5000);
    const second = await e.sync();
    assert.deepEqual([second.Added, second.Removed, second.Modified], [0, 0, 0]);
  });

  test('node reads: child folders, folder items (tags only), pages, skeleton, search, by reference', async () => {
    const top = (await e.ua(`{ GetChildFolders { ${NODE_FIELDS} } }`)).GetChildFolders;
    assert.deepEqual(
      top.map((n: any) => [n.ID, n.Kind, n.HasChildren]),
      [['DeviceHub', 'Folder', true]],
    );
    const devices = (
      await e.ua(`query($r: ID) { GetChildFolders(input: { ParentRef: $r }) { ID Kind OriginID } }`, {
        r: top[0].Ref,
      })
    ).GetChildFolders;
    assert.deepEqual(
      devices.map((n: any) => [n.ID, n.Kind, n.OriginID]),
      [
        ['line1', 'Device', dev1],
        ['line2', 'Device', dev2],
      ],
    );
    const page = (
      await e.ua(
        `query($r: ID) { GetChildFoldersPage(input: { ParentRef: $r, Limit: 1, Offset: 1 }) { Total Items { ID } } }`,
        {
          r: top[0].Ref,
        },
      )
    ).GetChildFoldersPage;
    assert.deepEqual(page, { Total: 2, Items: [{ ID: 'line2' }] });
    const line1 = await byPath('DeviceHub/line1');
    const items = (
      await e.ua(
        `query($r: ID) { GetFolderItems(input: { ParentRef: $r }) { Total Items { ID Kind DataType ValueType } } }`,
        {
          r: line1.Ref,
        },
      )
    ).GetFolderItems;
    assert.equal(items.Total, 2);
    assert.deepEqual(items.Items.map((n: any) => [n.ID, n.Kind, n.DataType, n.ValueType]).sort(), [
      ['speed', 'Tag', 'Double', 'float64'],
      ['temp', 'Tag', 'Double', 'float64'],
    ]);
    // GetFolderItems lists tags only; GetChildFolders no tags.
    assert.equal(
      (await e.ua(`query($r: ID) { GetChildFolders(input: { ParentRef: $r }) { ID } }`, { r: line1.Ref }))
        .GetChildFolders.length,
      0,
    );
    assert.equal((await e.ua(`{ GetFolderItems { Total } }`)).GetFolderItems.Total, 0);
    const skeleton = (await e.ua(`{ GetFolderSkeleton { ID Kind Depth TagCount HasChildren } }`))
      .GetFolderSkeleton;
    assert.deepEqual(skeleton, [
      { ID: 'DeviceHub', Kind: 'Folder', Depth: 0, TagCount: 0, HasChildren: true },
      { ID: 'line1', Kind: 'Device', Depth: 1, TagCount: 2, HasChildren: true },
      { ID: 'line2', Kind: 'Device', Depth: 1, TagCount: 1, HasChildren: true },
    ]);
    const search = (
      await e.ua(`{ SearchNodes(input: { Text: "TEMP", Kinds: [Tag] }) { Total Items { Path } } }`)
    ).SearchNodes;
    assert.deepEqual(search.Items.map((n: any) => n.Path).sort(), [
      'DeviceHub/line1/temp',
      'DeviceHub/line2/temp',
    ]);
    const byRef = (
      await e.ua(`query($r: [ID!]!) { GetNodesByRef(Refs: $r) { Path } }`, { r: [line1.Ref, 'no-such-ref'] })
    ).GetNodesByRef;
    assert.deepEqual(byRef, [{ Path: 'DeviceHub/line1' }]);
    const tagAsParent = await errorOf(
      `query($r: ID) { GetFolderItems(input: { ParentRef: $r }) { Total } }`,
      {
        r: (await byPath('DeviceHub/line1/temp')).Ref,
      },
    );
    assert.match(tagAsParent.message, /tags have no children/);
  });

  test('colliding IDs: GetNodes answers both, UpdateNode/DeleteNode need originId, ByRef needs nothing', async () => {
    const both = await nodesById(['temp']);
    assert.equal(both.length, 2);
    assert.notEqual(both[0].Ref, both[1].Ref);
    const ambiguous = await errorOf(
      `mutation { UpdateNode(input: { ID: "temp", Description: "x" }) { Ref } }`,
    );
    assert.equal(ambiguous.extensions.code, ERRORS.conflict.code);
    assert.match(ambiguous.message, /2 nodes have ID "temp"/);
    const updated = (
      await e.ua(
        `mutation($o: String) { UpdateNode(input: { ID: "temp", Description: "line 2 temperature" }, originId: $o) { Path Description Version } }`,
        { o: temp2 },
      )
    ).UpdateNode;
    assert.deepEqual(updated, {
      Path: 'DeviceHub/line2/temp',
      Description: 'line 2 temperature',
      Version: 2,
    });
    const one = await byPath('DeviceHub/line1/temp');
    const byRef = (
      await e.ua(
        `mutation($in: UpdateNodeByRefRequest!) { UpdateNodeByRef(input: $in) { Path Name Version OriginID } }`,
        { in: { Ref: one.Ref, Name: 'Temperature', ExpectedVersion: one.Version } },
      )
    ).UpdateNodeByRef;
    assert.deepEqual(byRef, {
      Path: 'DeviceHub/line1/temp',
      Name: 'Temperature',
      Version: 2,
      OriginID: temp1,
    });
    assert.match((await errorOf(`mutation { DeleteNode(ID: "temp") }`)).message, /2 nodes have ID "temp"/);
    assert.match((await errorOf(`mutation { DeleteNode(ID: "nope") }`)).message, /no node with ID "nope"/);
  });

  test('expectedVersion: a stale version is refused (conflict), the current one applies', async () => {
    const speed = await byPath('DeviceHub/line1/speed');
    const first = (
      await e.ua(`mutation($in: UpdateNodeByRefRequest!) { UpdateNodeByRef(input: $in) { Version } }`, {
        in: { Ref: speed.Ref, ExpectedVersion: speed.Version, Description: 'rpm' },
      })
    ).UpdateNodeByRef;
    assert.equal(first.Version, speed.Version + 1);
    const stale = await errorOf(
      `mutation($in: UpdateNodeByRefRequest!) { UpdateNodeByRef(input: $in) { Version } }`,
      { in: { Ref: speed.Ref, ExpectedVersion: speed.Version, Description: 'again' } },
    );
    assert.equal(stale.extensions.code, ERRORS.conflict.code);
    assert.match(stale.message, new RegExp(`is at version ${first.Version}, not ${speed.Version}`));
    const staleDelete = await errorOf(
      `mutation($r: ID!, $v: Int) { DeleteNodeByRef(Ref: $r, expectedVersion: $v) }`,
      {
        r: speed.Ref,
        v: speed.Version,
      },
    );
    assert.equal(staleDelete.extensions.code, ERRORS.conflict.code);
    assert.equal((await byPath('DeviceHub/line1/speed')).Description, 'rpm');
    const staleOld = await errorOf(
      `mutation($o: String, $v: Int) { DeleteNode(ID: "speed", originId: $o, expectedVersion: $v) }`,
      { o: speed.OriginID, v: speed.Version },
    );
    assert.equal(staleOld.extensions.code, ERRORS.conflict.code);
    assert.equal(
      (
        await e.ua(`mutation($r: ID!, $v: Int) { DeleteNodeByRef(Ref: $r, expectedVersion: $v) }`, {
          r: speed.Ref,
          v: first.Version,
        })
      ).DeleteNodeByRef,
      true,
    );
    assert.equal((await nodesById(['speed'])).length, 0);
    // The next sync brings it back (its DeviceHub tag still exists).
    const run = await e.sync();
    assert.equal(run.Added, 1);
  });

  test('without auto-sync, DeviceHub changes make nodes Pending or Orphaned (SubscribeNodeStateChanged); a sync settles them', async () => {
    const states = subs.subscribe(
      `subscription { SubscribeNodeStateChanged { Ref Path SyncState SyncFailureReason } }`,
    );
    // graphql-transport-ws does not acknowledge a subscribe: the subscription gets time to start.
    await sleep(300);
    const [gone] = await e.createTags(dev2, [
      { Name: 'S', TagName: 'gone', ValueType: 'float64', Properties: { address: '1' } },
    ]);
    let run = await e.sync();
    assert.equal(run.Added, 1);
    await e.ok(`mutation($in: UpdateRegisterRequest!) { UpdateRegister(input: $in) { ID } }`, {
      in: { ID: temp2, Description: 'changed in the DeviceHub' },
    });
    await e.ok(`mutation($ids: [ID!]!) { DeleteRegisters(IDs: $ids) }`, { ids: [gone] });
    await eventually(async () => {
      assert.equal((await byPath('DeviceHub/line2/gone')).SyncState, 'Orphaned');
      assert.equal((await byPath('DeviceHub/line2/temp')).SyncState, 'Pending');
      return true;
    }, 5000);
    await eventually(() => {
      const seen = states.map((p) => p.data.SubscribeNodeStateChanged);
      assert.ok(seen.some((s) => s.Path === 'DeviceHub/line2/gone' && s.SyncState === 'Orphaned'));
      assert.ok(seen.some((s) => s.Path === 'DeviceHub/line2/temp' && s.SyncState === 'Pending'));
      return true;
    }, 5000);
    run = await e.sync();
    assert.deepEqual([run.Added, run.Removed, run.Modified], [0, 1, 1]);
    const temp = await byPath('DeviceHub/line2/temp');
    assert.equal(temp.SyncState, 'Synced');
    assert.equal(temp.Description, 'changed in the DeviceHub');
    await eventually(() => {
      const seen = states.map((p) => p.data.SubscribeNodeStateChanged);
      assert.ok(seen.some((s) => s.Path === 'DeviceHub/line2/temp' && s.SyncState === 'Synced'));
      return true;
    }, 5000);
  });

  test('with auto-sync, a new DeviceHub tag appears without SyncNodes (an Auto run)', async () => {
    const settings = (
      await e.ua(
        `mutation { UpdateServerSettings(input: { AutoSync: true }) { RestartRequired Settings { AutoSync } } }`,
      )
    ).UpdateServerSettings;
    assert.deepEqual(settings, { RestartRequired: false, Settings: { AutoSync: true } });
    await e.createTags(dev1, [
      { Name: 'S', TagName: 'pressure', ValueType: 'float64', Properties: { address: '2' } },
    ]);
    await eventually(async () => {
      assert.equal((await byPath('DeviceHub/line1/pressure')).SyncState, 'Synced');
      return true;
    }, 5000);
    const cur = (await e.ua(`{ GetCurrentSync { Trigger State Added } }`)).GetCurrentSync;
    assert.deepEqual(cur, { Trigger: 'Auto', State: 'Succeeded', Added: 1 });
    await e.ua(`mutation { UpdateServerSettings(input: { AutoSync: false }) { RestartRequired } }`);
  });

  test('UploadHierarchyWithResult counts Added, Removed, Modified; deprecated UploadHierarchy still works', async () => {
    const tree = (desc: string, third: string) => ({
      in: {
        Nodes: [
          {
            ID: 'Plant',
            Kind: 'Folder',
            Children: [
              {
                ID: 'Boiler',
                Kind: 'Folder',
                Description: desc,
                Children: [
                  { ID: 'temp', Kind: 'Tag', OriginID: temp1, AccessControl: 'ReadWrite' },
                  { ID: third, Kind: 'Tag' },
                ],
              },
              { ID: 'Ghost', Kind: 'Tag', OriginID: 'no-such-tag' },
            ],
          },
        ],
      },
    });
    const q = `mutation($in: UploadHierarchyRequest!) { UploadHierarchyWithResult(input: $in) { Added Removed Modified RestartRequired } }`;
    const first = (await e.ua(q, tree('steam', 'local'))).UploadHierarchyWithResult;
    // The upload replaces the tree: the DeviceHub folder (1 + 2 devices + 4 tags) is removed.
    assert.deepEqual(first, { Added: 5, Removed: 7, Modified: 0, RestartRequired: 0 });
    const boilerTemp = await byPath('Plant/Boiler/temp');
    assert.deepEqual(
      [boilerTemp.SyncState, boilerTemp.OriginID, boilerTemp.AccessControl, boilerTemp.DataType],
      ['Synced', temp1, 'ReadWrite', 'Double'],
    );
    assert.equal((await byPath('Plant/Boiler/local')).SyncState, 'Local');
    const ghost = await byPath('Plant/Ghost');
    assert.equal(ghost.SyncState, 'Failed');
    assert.match(ghost.SyncFailureReason, /DeviceHub tag no-such-tag does not exist/);
    const second = (await e.ua(q, tree('hot water', 'level'))).UploadHierarchyWithResult;
    assert.deepEqual(second, { Added: 1, Removed: 1, Modified: 1, RestartRequired: 0 });
    assert.equal((await byPath('Plant/Boiler')).Version, 2);
    assert.equal((await byPath('Plant/Boiler/temp')).Ref, boilerTemp.Ref, 'a node keeps its reference');
    const dup = await errorOf(q, {
      in: {
        Nodes: [
          { ID: 'A', Kind: 'Folder' },
          { ID: 'A', Kind: 'Folder' },
        ],
      },
    });
    assert.match(dup.message, /two nodes under the top level have ID "A"/);
    const old = await e.ua(
      `mutation($in: UploadHierarchyRequest!) { UploadHierarchy(input: $in) }`,
      tree('hot water', 'level'),
    );
    assert.equal(old.UploadHierarchy, true);
  });

  test('staged upload: invisible until committed (GraphQL and OPC UA), commit applies at once, cancel discards', async () => {
    const stage = (
      await e.ua(
        `mutation($in: StageHierarchyRequest!) { StageHierarchy(input: $in) { StageID NodeCount } }`,
        {
          in: {
            Nodes: [{ ID: 'Staged', Kind: 'Folder', Children: [{ ID: 't', Kind: 'Tag', OriginID: temp2 }] }],
          },
        },
      )
    ).StageHierarchy;
    assert.equal(stage.NodeCount, 2);
    const names = async () =>
      (await e.ua(`{ GetChildFolders { ID } }`)).GetChildFolders.map((n: any) => n.ID);
    assert.deepEqual(await names(), ['Plant']);
    const s = await openSession(e.endpoint);
    try {
      const staged = await s.session.read({ nodeId: 'ns=1;s=Staged/t', attributeId: 13 });
      assert.equal(staged.statusCode, StatusCodes.BadNodeIdUnknown);
      const commit = (
        await e.ua(
          `mutation($id: ID!) { CommitStagedHierarchy(StageID: $id) { Added Removed Modified RestartRequired } }`,
          {
            id: stage.StageID,
          },
        )
      ).CommitStagedHierarchy;
      assert.deepEqual(commit, { Added: 2, Removed: 5, Modified: 0, RestartRequired: 0 });
      assert.deepEqual(await names(), ['Staged']);
      const read = await s.session.read({ nodeId: 'ns=1;s=Staged/t', attributeId: 13 });
      assert.notEqual(read.statusCode, StatusCodes.BadNodeIdUnknown);
      const plant = await s.session.read({ nodeId: 'ns=1;s=Plant/Boiler/temp', attributeId: 13 });
      assert.equal(plant.statusCode, StatusCodes.BadNodeIdUnknown);
    } finally {
      await s.close();
    }
    const again = await errorOf(`mutation($id: ID!) { CommitStagedHierarchy(StageID: $id) { Added } }`, {
      id: stage.StageID,
    });
    assert.match(again.message, /no staged hierarchy/);
    const other = (
      await e.ua(`mutation($in: StageHierarchyRequest!) { StageHierarchy(input: $in) { StageID } }`, {
        in: { Nodes: [{ ID: 'Discarded', Kind: 'Folder' }] },
      })
    ).StageHierarchy;
    assert.equal(
      (await e.ua(`mutation($id: ID!) { CancelStagedHierarchy(StageID: $id) }`, { id: other.StageID }))
        .CancelStagedHierarchy,
      true,
    );
    assert.match(
      (
        await errorOf(`mutation($id: ID!) { CommitStagedHierarchy(StageID: $id) { Added } }`, {
          id: other.StageID,
        })
      ).message,
      /no staged hierarchy/,
    );
    assert.deepEqual(await names(), ['Staged']);
  });

  test('server settings: live ones apply, security ones say RestartRequired; invalid ones are refused', async () => {
    const s0 = (
      await e.ua(`{ GetServerSettings { Enabled EndpointUrl Port AllowAnonymous SecurityPolicies SecurityModes
        MaxSessions AutoAcceptUntrusted PendingRestart Certificate } }`)
    ).GetServerSettings;
    assert.equal(s0.Enabled, true);
    assert.match(s0.EndpointUrl, /^opc\.tcp:\/\//);
    assert.equal(s0.AllowAnonymous, false);
    assert.deepEqual(s0.SecurityPolicies, [
      'None',
      'Basic256Sha256',
      'Aes128_Sha256_RsaOaep',
      'Aes256_Sha256_RsaPss',
    ]);
    assert.deepEqual(s0.SecurityModes, ['None', 'Sign', 'SignAndEncrypt']);
    assert.match(s0.Certificate, /BEGIN CERTIFICATE/);
    const live = (
      await e.ua(`mutation { UpdateServerSettings(input: { MaxSessions: 7, AutoAcceptUntrusted: false }) {
        RestartRequired Settings { MaxSessions PendingRestart } } }`)
    ).UpdateServerSettings;
    assert.deepEqual(live, { RestartRequired: false, Settings: { MaxSessions: 7, PendingRestart: [] } });
    assert.equal(await e.t.edge.shell.module('opcua').server!.maxSessions(), 7);
    const restart = (
      await e.ua(`mutation { UpdateServerSettings(input: { AllowAnonymous: true }) {
        RestartRequired Settings { AllowAnonymous PendingRestart } } }`)
    ).UpdateServerSettings;
    assert.deepEqual(restart, {
      RestartRequired: true,
      Settings: { AllowAnonymous: true, PendingRestart: ['allowAnonymous'] },
    });
    const conf = await e.t.call('/opcua/service_conf', { headers: { authorization: e.auth } });
    assert.equal(conf.status, 200);
    assert.deepEqual(conf.body.pendingRestart, ['allowAnonymous']);
    assert.equal(conf.body.running, true);
    // Back to what the server runs with: nothing pending.
    const back = (
      await e.ua(`mutation { UpdateServerSettings(input: { AllowAnonymous: false }) { RestartRequired } }`)
    ).UpdateServerSettings;
    assert.equal(back.RestartRequired, false);
    const bad = await errorOf(
      `mutation { UpdateServerSettings(input: { SecurityPolicies: [None], SecurityModes: [SignAndEncrypt] }) { RestartRequired } }`,
    );
    assert.match(bad.message, /need a policy other than None/);
    const version = await e.t.call('/opcua/version', { headers: { authorization: e.auth } });
    assert.equal(version.status, 200);
    assert.equal(typeof version.body.version, 'string');
  });

  test('users: set, list, delete; BulkUpdateTagAccessControl refuses non-tags', async () => {
    await e.ua(`mutation { SetUser(input: { Username: "scada", Password: "scada-password" }) { Username } }`);
    const users = (await e.ua(`{ GetUsers { Username } }`)).GetUsers.map((u: any) => u.Username);
    assert.deepEqual(users, ['operator', 'scada']);
    const short = await errorOf(
      `mutation { SetUser(input: { Username: "x", Password: "short" }) { Username } }`,
    );
    assert.match(short.message, /8 to 256 characters/);
    const s = await openSession(e.endpoint, { user: { userName: 'scada', password: 'scada-password' } });
    await s.close();
    assert.equal((await e.ua(`mutation { DeleteUser(Username: "scada") }`)).DeleteUser, true);
    await assert.rejects(
      openSession(e.endpoint, { user: { userName: 'scada', password: 'scada-password' } }),
    );
    const folder = (await e.ua(`{ GetChildFolders { Ref } }`)).GetChildFolders[0];
    const err = await errorOf(
      `mutation($in: BulkUpdateTagAccessControlRequest!) { BulkUpdateTagAccessControl(input: $in) { Updated } }`,
      { in: { Refs: [folder.Ref], AccessControl: 'ReadWrite' } },
    );
    assert.match(err.message, /AccessControl applies to tags/);
  });
});
