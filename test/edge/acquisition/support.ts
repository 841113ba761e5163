/**
 * Test support for acquisition: an edge with a NATS client on its gateway and a GraphQL helper.
 * The device peers (Modbus, serial lines, Mosquitto) are in test/helpers/peers/.
 */
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from 'nats';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../../helpers/edge.js';
import type { EdgeConfig } from '../../../src/edge/service.js';
import { eventually } from '../../helpers/util.js';

export interface AcqEdge {
  t: TestEdge;
  auth: string;
  nc: NatsConnection;
  /** Runs a GraphQL request on /devicehub/v2 and asserts it had no errors. */
  ok(query: string, variables?: Record<string, unknown>): Promise<any>;
  createDevice(
    name: string,
    driver: string,
    props?: Record<string, string>,
    extra?: Record<string, unknown>,
  ): Promise<string>;
  createTags(deviceId: string, tags: Array<Record<string, unknown>>): Promise<string[]>;
  tagStates(ids: string[]): Promise<Array<{ State: string; Reason: string }>>;
  stop(): Promise<void>;
}

export async function startAcqEdge(overrides: Partial<EdgeConfig> = {}): Promise<AcqEdge> {
  // Reconnect attempts at most 2 s apart, so that restored peers are seen quickly.
  const t = await startTestEdge({ logLevel: 'error', acquisitionBackoffMax: 2000, ...overrides });
  const admin = await bootstrapAdmin(t);
  const auth = `Bearer ${(await clientToken(t, admin)).token}`;
  const nc = await connect({ servers: t.edge.datahub.gateway!.url });
  const ok = async (query: string, variables?: Record<string, unknown>) => {
    const r = await graphql(t, '/devicehub/v2', auth, query, variables);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
    return r.body.data;
  };
  return {
    t,
    auth,
    nc,
    ok,
    async createDevice(name, driver, props = {}, extra = {}) {
      const d = await ok(`mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`, {
        in: {
          Name: name,
          DriverID: driver,
          Properties: Object.entries(props).map(([Key, Value]) => ({ Key, Value })),
          ...extra,
        },
      });
      return d.CreateDevice.ID as string;
    },
    async createTags(deviceId, tags) {
      const d = await ok(`mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`, {
        in: tags.map((tag) => ({
          DeviceID: deviceId,
          ...tag,
          Properties: Object.entries((tag.Properties as Record<string, string>) ?? {}).map(
            ([Name, Value]) => ({ Name, Value }),
          ),
        })),
      });
      return (d.CreateRegisters as Array<{ ID: string }>).map((r) => r.ID);
    },
    async tagStates(ids) {
      const d = await ok(`query($ids: [ID!]!) { GetTagStatus(IDs: $ids) { State Reason } }`, { ids });
      return d.GetTagStatus;
    },
    async stop() {
      await nc.close().catch(() => undefined);
      await t.stop();
    },
  };
}

/** The next message on `subject` whose JSON payload satisfies `pred`. */
export function nextMessage(
  nc: NatsConnection,
  subject: string,
  pred: (payload: any) => boolean = () => true,
  ms = 5000,
): Promise<any> {
  return new Promise((resolve, reject) => {
    const sub = nc.subscribe(subject);
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`no matching message on ${subject} within ${ms} ms`));
    }, ms);
    void (async () => {
      for await (const m of sub) {
        let p: unknown;
        try {
          p = m.json();
        } catch {
          p = m.string();
        }
        if (pred(p)) {
          clearTimeout(timer);
          sub.unsubscribe();
          resolve(p);
          return;
        }
      }
    })();
  });
}

/** Runs a DeviceHub browse task to the end; answers every item (folders and leaves) by path. */
export async function browseAll(e: AcqEdge, deviceId: string, ms = 20_000): Promise<Map<string, any>> {
  const task = (
    await e.ok(`mutation($in: CreateBrowseTaskRequest!) { CreateBrowseTask(input: $in) { ID State } }`, {
      in: { DeviceID: deviceId },
    })
  ).CreateBrowseTask;
  let state = task.State;
  await eventually(
    async () => {
      state = (await e.ok(`query($id: ID!) { GetBrowseTask(ID: $id) { State Error } }`, { id: task.ID }))
        .GetBrowseTask;
      return state.State !== 'Running';
    },
    ms,
    'browse task done',
  );
  assert.equal(state.State, 'Done', JSON.stringify(state));
  const items = new Map<string, any>();
  const walk = async (path: string | null) => {
    const list = (
      await e.ok(
        `query($in: ListBrowseTaskItemsRequest!) { ListBrowseTaskItems(input: $in) { Items { Path Name IsFolder RegisterName ValueType Properties { Name Value } } } }`,
        { in: { TaskID: task.ID, Path: path, Limit: 1000 } },
      )
    ).ListBrowseTaskItems.Items;
    for (const it of list) {
      items.set(it.Path, it);
      if (it.IsFolder) await walk(it.Path);
    }
  };
  await walk(null);
  return Object.assign(items, { taskId: task.ID as string });
}
