/**
 * The edge's OPC UA server end to end, with node-opcua's client as the real peer: the tree after
 * a sync (browse), a Generator tag read and followed by a monitored item, a Modbus tag written
 * through OPC UA and seen at the Modbus server, a refused write on a read-only tag, a refused
 * anonymous session, SignAndEncrypt with a trusted client certificate and an untrusted one refused.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AttributeIds,
  ClientMonitoredItem,
  ClientSubscription,
  DataType,
  NodeClass,
  StatusCodes,
  TimestampsToReturn,
  type ClientSession,
  type DataValue,
} from 'node-opcua';
import { ModbusPeer } from '../helpers/peers/modbus.js';
import {
  clientPki,
  NODE_FIELDS,
  openSession,
  OPERATOR,
  startUaEdge,
  type UaEdge,
} from '../edge/opcua/support.js';
import { eventually } from '../helpers/util.js';

async function browseNames(session: ClientSession, nodeId: string): Promise<Map<string, string>> {
  const r = await session.browse(nodeId);
  assert.equal(r.statusCode, StatusCodes.Good);
  return new Map((r.references ?? []).map((ref) => [ref.browseName.name!, ref.nodeId.toString()]));
}

describe('OPC UA server: browse, read, subscribe, write, security', () => {
  let e: UaEdge;
  const peer = new ModbusPeer(100);
  const peer2 = new ModbusPeer(100);
  let sineId: string | undefined;
  let hr5: string | undefined;

  before(async () => {
    peer.holding[5] = 7;
    peer.holding[6] = 99;
    await peer.start();
    await peer2.start();
    e = await startUaEdge();
    assert.ok(e.endpoint, 'the OPC UA server runs');
    const gen = await e.createDevice('gen', 'Generator');
    [sineId] = await e.createTags(gen, [
      { Name: 'S', TagName: 'sine', ValueType: 'float64', IntervalMs: 100, Properties: { address: '0' } },
    ]);
    const plc = await e.createDevice('plc', 'Modbus TCP', { host: '127.0.0.1', port: String(peer.port) });
    [hr5] = await e.createTags(plc, [
      { Name: 'HR', TagName: 'hr5', ValueType: 'int16', IntervalMs: 100, Properties: { address: '5' } },
      { Name: 'HR', TagName: 'hr6', ValueType: 'int16', IntervalMs: 100, Properties: { address: '6' } },
    ]);
    const plc2 = await e.createDevice('plc2', 'Modbus TCP', { host: '127.0.0.1', port: String(peer2.port) });
    await e.createTags(plc2, [
      { Name: 'HR', TagName: 'hr1', ValueType: 'int16', IntervalMs: 100, Properties: { address: '1' } },
    ]);
    await e.ua(`mutation($in: SetUserRequest!) { SetUser(input: $in) { Username } }`, {
      in: { Username: OPERATOR.userName, Password: OPERATOR.password },
    });
  });
  after(async () => {
    await e?.stop();
    await peer.stop();
    await peer2.stop().catch(() => undefined);
  });

  test('a sync builds DeviceHub/<device>/<tag>, and a client browses it', async () => {
    const run = await e.sync();
    assert.equal(run.State, 'Succeeded', run.Error);
    assert.equal(run.Added, 8); // the DeviceHub folder, 3 devices, 4 tags
    const d = await e.ua(`{ SearchNodes(input: { Text: "sine" }) { Total Items { ${NODE_FIELDS} } } }`);
    assert.equal(d.SearchNodes.Total, 1);
    const sine = d.SearchNodes.Items[0];
    assert.equal(sine.Path, 'DeviceHub/gen/sine');
    assert.equal(sine.NodeID, 'ns=1;s=DeviceHub/gen/sine');
    assert.equal(sine.OriginID, sineId);
    assert.equal(sine.DataType, 'Double');
    assert.equal(sine.SyncState, 'Synced');
    assert.equal(sine.AccessControl, 'ReadOnly');

    const s = await openSession(e.endpoint);
    try {
      const top = await browseNames(s.session, 'ObjectsFolder');
      assert.ok(top.has('DeviceHub'), [...top.keys()].join(', '));
      const devices = await browseNames(s.session, top.get('DeviceHub')!);
      assert.deepEqual([...devices.keys()].sort(), ['gen', 'plc', 'plc2']);
      const tags = await browseNames(s.session, devices.get('plc')!);
      assert.deepEqual([...tags.keys()].sort(), ['hr5', 'hr6']);
      const cls = await s.session.read({ nodeId: tags.get('hr5')!, attributeId: AttributeIds.NodeClass });
      assert.equal(cls.value.value, NodeClass.Variable);
    } finally {
      await s.close();
    }
  });

  test('a Generator tag reads Good with a source timestamp, and a monitored item sees it change', async () => {
    const s = await openSession(e.endpoint);
    try {
      const nodeId = 'ns=1;s=DeviceHub/gen/sine';
      const first = await eventually(async () => {
        const dv = await s.session.read({ nodeId, attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode.name, 'Good');
        return dv;
      }, 10_000);
      assert.equal(first.value.dataType, DataType.Double);
      assert.ok(first.sourceTimestamp, 'source timestamp');
      assert.ok(Math.abs(first.sourceTimestamp.getTime() - Date.now()) < 10_000);

      const sub = ClientSubscription.create(s.session, {
        requestedPublishingInterval: 50,
        requestedMaxKeepAliveCount: 20,
        publishingEnabled: true,
      });
      const values: DataValue[] = [];
      const item = ClientMonitoredItem.create(
        sub,
        { nodeId, attributeId: AttributeIds.Value },
        { samplingInterval: 0, queueSize: 10, discardOldest: true },
        TimestampsToReturn.Both,
      );
      item.on('changed', (dv: DataValue) => values.push(dv));
      await eventually(
        () => values.length >= 4,
        10_000,
        () => `4 notifications (${values.length})`,
      );
      const distinct = new Set(values.map((v) => v.value.value as number));
      assert.ok(distinct.size >= 3, `values change: ${[...distinct].join(', ')}`);
      await sub.terminate();
    } finally {
      await s.close();
    }
  });

  test('writes: refused on a read-only tag, then through Command to the Modbus server', async () => {
    const s = await openSession(e.endpoint);
    try {
      const nodeId = 'ns=1;s=DeviceHub/plc/hr5';
      const value = { value: { dataType: DataType.Int16, value: 1234 } };
      const refused = await s.session.write({ nodeId, attributeId: AttributeIds.Value, value });
      assert.ok(
        refused === StatusCodes.BadNotWritable || refused === StatusCodes.BadUserAccessDenied,
        refused.toString(),
      );
      assert.equal(peer.holding[5], 7);

      const d = await e.ua(`{ SearchNodes(input: { Text: "hr5", Kinds: [Tag] }) { Items { Ref } } }`);
      const ref = d.SearchNodes.Items[0].Ref;
      const bulk = await e.ua(
        `mutation($in: BulkUpdateTagAccessControlRequest!) {
          BulkUpdateTagAccessControl(input: $in) { Updated Items { AccessControl Version } } }`,
        { in: { Refs: [ref], AccessControl: 'ReadWrite' } },
      );
      assert.equal(bulk.BulkUpdateTagAccessControl.Updated, 1);
      assert.equal(bulk.BulkUpdateTagAccessControl.Items[0].AccessControl, 'ReadWrite');

      const ok = await s.session.write({ nodeId, attributeId: AttributeIds.Value, value });
      assert.equal(ok, StatusCodes.Good, ok.toString());
      assert.equal(peer.holding[5], 1234);
      // The value comes back through the DataHub.
      await eventually(async () => {
        const dv = await s.session.read({ nodeId, attributeId: AttributeIds.Value });
        assert.equal(dv.value.value, 1234);
        return true;
      }, 10_000);
      // hr6 stays read-only.
      const ro = await s.session.write({
        nodeId: 'ns=1;s=DeviceHub/plc/hr6',
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int16, value: 1 } },
      });
      assert.equal(ro, StatusCodes.BadNotWritable);
      assert.equal(peer.holding[6], 99);
      void hr5;
    } finally {
      await s.close();
    }
  });

  test('a driver failure is the status code of the write', async () => {
    const s = await openSession(e.endpoint);
    try {
      const d = await e.ua(`{ SearchNodes(input: { Text: "hr1", Kinds: [Tag] }) { Items { Ref Path } } }`);
      assert.equal(d.SearchNodes.Items[0].Path, 'DeviceHub/plc2/hr1');
      await e.ua(
        `mutation($in: BulkUpdateTagAccessControlRequest!) { BulkUpdateTagAccessControl(input: $in) { Updated } }`,
        { in: { Refs: [d.SearchNodes.Items[0].Ref], AccessControl: 'ReadWrite' } },
      );
      const nodeId = 'ns=1;s=DeviceHub/plc2/hr1';
      const value = { value: { dataType: DataType.Int16, value: 55 } };
      assert.equal(
        await s.session.write({ nodeId, attributeId: AttributeIds.Value, value }),
        StatusCodes.Good,
      );
      assert.equal(peer2.holding[1], 55);
      await peer2.stop();
      const status = await s.session.write({
        nodeId,
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int16, value: 66 } },
      });
      assert.ok(
        status === StatusCodes.BadDeviceFailure || status === StatusCodes.BadNoCommunication,
        status.toString(),
      );
    } finally {
      await s.close();
    }
  });

  test('an anonymous session is refused while anonymous is off', async () => {
    await assert.rejects(
      openSession(e.endpoint, { user: null }),
      /Cannot find ANONYMOUS user token policy|BadIdentityTokenInvalid|BadIdentityTokenRejected/,
    );
    await assert.rejects(
      openSession(e.endpoint, { user: { userName: OPERATOR.userName, password: 'wrong-password' } }),
      /BadUserAccessDenied|BadIdentityTokenRejected/,
    );
  });

  test('SignAndEncrypt: an untrusted client certificate is refused, trusted over the API it is accepted', async () => {
    const pki = clientPki();
    const options = { mode: 'SignAndEncrypt' as const, policy: 'Basic256Sha256' as const, pki };
    await assert.rejects(openSession(e.endpoint, options));
    const listed = await eventually(async () => {
      const d = await e.ua(
        `{ GetCertificates(input: { Group: Rejected }) { Thumbprint Group ApplicationUri } }`,
      );
      assert.equal(d.GetCertificates.length, 1);
      return d.GetCertificates[0];
    }, 10_000);
    const moved = await e.ua(
      `mutation($in: MoveCertificateRequest!) { MoveCertificate(input: $in) { Thumbprint Group } }`,
      { in: { Thumbprint: listed.Thumbprint, Group: 'Trusted' } },
    );
    assert.deepEqual(moved.MoveCertificate, { Thumbprint: listed.Thumbprint, Group: 'Trusted' });
    for (const policy of ['Basic256Sha256', 'Aes128_Sha256_RsaOaep', 'Aes256_Sha256_RsaPss'] as const) {
      const s = await openSession(e.endpoint, { ...options, policy });
      const dv = await s.session.read({
        nodeId: 'ns=1;s=DeviceHub/gen/sine',
        attributeId: AttributeIds.Value,
      });
      assert.equal(dv.statusCode.name, 'Good', policy);
      await s.close();
    }
    // Another client, not trusted, is still refused; deleting the trusted one refuses it again.
    await assert.rejects(openSession(e.endpoint, { ...options, pki: clientPki() }));
    assert.equal(
      (await e.ua(`mutation($t: String!) { DeleteCertificate(Thumbprint: $t) }`, { t: listed.Thumbprint }))
        .DeleteCertificate,
      true,
    );
    await assert.rejects(openSession(e.endpoint, options));
  });
});
