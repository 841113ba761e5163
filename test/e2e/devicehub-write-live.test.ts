/**
 * `WriteTag` and the `TagValues` subscription of /devicehub/v2 (issue 25: the console writes and
 * follows values without NATS): a write reaches a Generator's memory register and comes back in
 * the tag's status; a read-only register's refusal is the device's own message; TagValues sends
 * every followed tag first, then changes; its bounds are refused with a 400; a viewer cannot write.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { EdgeClient } from '../../src/client/index.js';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { eventually } from '../helpers/util.js';

const P = '/devicehub/v2';

describe('devicehub WriteTag and TagValues', { concurrency: 1 }, () => {
  let t: TestEdge;
  let edge: EdgeClient;
  let viewer: string;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await startTestEdge();
    const session = await bootstrapAdmin(t);
    edge = new EdgeClient({
      url: t.url,
      credentials: { bearer: (await clientToken(t, session)).token },
      insecure: true,
    });
    viewer = (await clientToken(t, session, 'viewer')).token;
    await edge.graphql(P, 'mutation { CreateDevice(input: { Name: "g", DriverID: "Generator" }) { ID } }');
    for (const [name, register] of [
      ['mem', 'M'],
      ['sine', 'S'],
    ]) {
      const r = await edge.graphql(
        P,
        'mutation C($input: CreateRegisterRequest!) { CreateRegister(input: $input) { ID } }',
        {
          input: {
            DeviceID: 'g',
            Name: register,
            TagName: name,
            ValueType: 'int16',
            IntervalMs: 200,
            Properties: [{ Name: 'address', Value: '0' }],
          },
        },
      );
      ids[name!] = r.CreateRegister.ID;
    }
  });
  after(async () => {
    edge?.close();
    await t?.stop();
  });

  const write = (ID: string, Value: unknown) =>
    edge.graphql(
      P,
      'mutation W($input: WriteTagRequest!) { WriteTag(input: $input) { Success Value Error Timestamp } }',
      {
        input: { ID, Value },
      },
    );

  test('a write reaches the device and comes back in the status', async () => {
    const w = await eventually(async () => {
      const r = await write(ids.mem!, 42);
      assert.equal(r.WriteTag.Success, true, JSON.stringify(r));
      return r.WriteTag;
    });
    assert.equal(w.Value, 42);
    assert.equal(w.Error, null);
    await eventually(async () => {
      const s = await edge.graphql(P, 'query S($IDs: [ID!]!) { GetTagStatus(IDs: $IDs) { Value } }', {
        IDs: [ids.mem],
      });
      assert.equal(s.GetTagStatus[0].Value, 42);
      return true;
    });
  });

  test("a refused write answers the device's reason", async () => {
    const r = await write(ids.sine!, 1);
    assert.equal(r.WriteTag.Success, false);
    assert.match(r.WriteTag.Error, /read-only/);
  });

  test('an unknown tag is a not_found error, a viewer is refused', async () => {
    await assert.rejects(write('no-such-tag', 1), (err: { code?: string }) => err.code === 'not_found');
    const res = await graphql(
      t,
      P,
      `Bearer ${viewer}`,
      'mutation { WriteTag(input: { ID: "x", Value: 1 }) { Success } }',
    );
    assert.equal(res.status, 403);
  });

  test('TagValues sends the followed tags, then their changes; bounds are refused', async () => {
    const ws = new WebSocket(`${t.url.replace(/^https/, 'wss')}${P}`, 'graphql-transport-ws', {
      headers: { authorization: `Bearer ${await edge.token()}` },
      rejectUnauthorized: false,
    });
    const messages = new Map<
      string,
      { data?: { TagValues: { ID: string; Value: unknown }[] }; errors?: unknown[] }[]
    >();
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw));
      if (m.type === 'connection_ack') {
        const q = 'subscription V($input: TagValuesRequest!) { TagValues(input: $input) { ID State Value } }';
        ws.send(
          JSON.stringify({
            id: 'ok',
            type: 'subscribe',
            payload: { query: q, variables: { input: { IDs: [ids.mem, ids.sine], IntervalMs: 250 } } },
          }),
        );
        ws.send(
          JSON.stringify({
            id: 'fast',
            type: 'subscribe',
            payload: { query: q, variables: { input: { IDs: [ids.mem], IntervalMs: 10 } } },
          }),
        );
      } else if (m.id) {
        const list = messages.get(m.id) ?? [];
        list.push(m.type === 'next' ? m.payload : { errors: [m.payload] });
        messages.set(m.id, list);
      }
    });
    ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    try {
      await eventually(() => {
        const first = messages.get('ok')?.[0]?.data?.TagValues ?? [];
        assert.deepEqual(first.map((s) => s.ID).sort(), [ids.mem, ids.sine].sort());
        return true;
      });
      await write(ids.mem!, 7);
      await eventually(() => {
        const later = (messages.get('ok') ?? []).slice(1).flatMap((m) => m.data?.TagValues ?? []);
        assert.ok(
          later.some((s) => s.ID === ids.mem && s.Value === 7),
          JSON.stringify(later),
        );
        return true;
      });
      await eventually(
        () => /IntervalMs must be/.test(JSON.stringify(messages.get('fast') ?? [])),
        10_000,
        () => JSON.stringify([...messages]).slice(0, 1500),
      );
    } finally {
      ws.close();
    }
  });
});
