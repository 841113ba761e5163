/**
 * A subscription socket whose upgrade carries no credentials (a browser signed in with an API
 * client cannot set Authorization on a WebSocket upgrade) sends them in `connection_init`, and the
 * edge checks them exactly like the header: a valid API client token (admin or viewer) subscribes;
 * a forged, expired or missing one, or the admin's session before the first-run setup, closes the
 * socket with 4403/4401; a socket that never sends `connection_init` is closed (4408) within the
 * bounded init timeout.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN_PASSWORD,
  bootstrapAdmin,
  clientToken,
  startTestEdge,
  type TestEdge,
} from '../helpers/edge.js';
import { runSocket, type SocketScript } from '../helpers/gql-socket.js';
import { sleep } from '../helpers/util.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { EdgeClient, TWINS, TWINS_PATH } from '../../src/client/index.js';

const DEVICEHUB_PATH = '/devicehub/v2';
import { CONNECTION_INIT_TIMEOUT_MS } from '../../src/kernel/http/socket-auth.js';

const TOKEN_TTL_S = 3;
const playground = {
  query: TWINS.PlaygroundMessages,
  variables: { input: { Expression: 'value * 2', Messages: [{ value: 21 }] } },
};

describe('subscription credentials in connection_init', () => {
  let t: TestEdge;
  let wsUrl: string;
  let sessionBeforeSetup: string;
  /** An admin API client's credentials: its tokens, like every token here, live TOKEN_TTL_S seconds. */
  let adminClient: { clientId: string; clientSecret: string };

  const socket = (script: SocketScript, path = TWINS_PATH) => runSocket(`${wsUrl}${path}`, script);
  /**
   * A fresh access token of a new API client (tokens live TOKEN_TTL_S seconds here), made with a
   * fresh admin token: the admin's session of the setup may have expired since (it did, at load 20).
   */
  const fresh = async (role: 'admin' | 'viewer') => {
    const client = new EdgeClient({ url: t.url, credentials: adminClient, insecure: true });
    try {
      return (await clientToken(t, await client.token(), role)).token;
    } finally {
      client.close();
    }
  };

  before(async () => {
    t = await startTestEdge({ tokenTtl: TOKEN_TTL_S });
    wsUrl = t.url.replace(/^http/, 'ws');
    const login = await t.call('/auth/v2/login', {
      json: { username: 'admin', password: ADMIN_PASSWORD, providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(login.status, 200, login.text);
    sessionBeforeSetup = login.body.jwtAccess as string;
  });
  after(() => t.stop());

  test("the admin's session before the first-run setup is refused like over HTTP (4403)", async () => {
    const out = await socket({
      init: { Authorization: `Bearer ${sessionBeforeSetup}` },
      subscribe: playground,
    });
    assert.equal(out.closeCode, 4403, JSON.stringify(out));
    assert.match(out.closeReason!, /first-run setup is not complete/);
    assert.equal(out.messages.length, 0);
    const made = await clientToken(t, await bootstrapAdmin(t), 'admin');
    adminClient = { clientId: made.clientId, clientSecret: made.secret };
  });

  test('an API client token in connection_init subscribes (admin and viewer; any header case)', async () => {
    for (const [role, init] of [
      ['admin', (tok: string) => ({ Authorization: `Bearer ${tok}` })],
      ['viewer', (tok: string) => ({ authorization: `Bearer ${tok}` })],
      ['viewer', (tok: string) => ({ headers: { Authorization: `Bearer ${tok}` } })],
    ] as const) {
      const out = await socket({ init: init(await fresh(role)), subscribe: playground });
      assert.equal(out.result?.type, 'next', `${role}: ${JSON.stringify(out)}`);
      assert.equal(out.result.payload.data.PlaygroundMessages.Output, 42);
    }
  });

  test('the devicehub live endpoint too, and the upgrade header still works as before', async () => {
    const token = await fresh('viewer');
    const viaInit = await socket({ init: { Authorization: `Bearer ${token}` } }, DEVICEHUB_PATH);
    assert.ok(
      viaInit.messages.some((m) => m.type === 'connection_ack'),
      JSON.stringify(viaInit),
    );
    const viaHeader = await socket(
      { headers: { authorization: `Bearer ${token}` }, init: {}, subscribe: playground },
      TWINS_PATH,
    );
    assert.equal(viaHeader.result?.type, 'next', JSON.stringify(viaHeader));
  });

  test('a forged, malformed or expired token is refused (4403), nothing acknowledged', async () => {
    const valid = await fresh('admin');
    const [head, body] = valid.split('.');
    const forgedJwt = `${head}.${body}.${'A'.repeat(43)}`;
    for (const authorization of [
      `Bearer ${forgedJwt}`,
      'Bearer mwt_not-a-token',
      `Token ${valid}`,
      'Basic !!!',
    ]) {
      const out = await socket({ init: { Authorization: authorization }, subscribe: playground });
      assert.equal(out.closeCode, 4403, `${authorization.slice(0, 20)}: ${JSON.stringify(out)}`);
      assert.match(out.closeReason!, /^Forbidden: /);
      assert.equal(out.messages.length, 0, JSON.stringify(out.messages));
    }
    // Time is the test: the token expires on the edge.
    const expiring = await fresh('viewer');
    await sleep(TOKEN_TTL_S * 1000 + 500);
    const expired = await socket({ init: { Authorization: `Bearer ${expiring}` }, subscribe: playground });
    assert.equal(expired.closeCode, 4403, JSON.stringify(expired));
    assert.match(expired.closeReason!, /invalid or expired token/);
  });

  test('no credentials: 4401 at connection_init, or at a subscribe sent before it', async () => {
    for (const script of [
      { init: {}, subscribe: playground },
      { init: { 'X-CSRF-Token': 'x' }, subscribe: playground },
      { init: null, subscribe: playground, subscribeFirst: true },
    ] satisfies SocketScript[]) {
      const out = await socket(script);
      assert.equal(out.closeCode, 4401, JSON.stringify(out));
      assert.equal(out.messages.length, 0);
    }
    // A plain GET of the endpoint (no upgrade) still needs credentials.
    assert.equal((await t.call(`${TWINS_PATH}?query={__typename}`)).status, 401);
  });

  test('a socket that sends nothing is closed at the init timeout (4408)', async () => {
    const out = await socket({ init: null, timeoutMs: CONNECTION_INIT_TIMEOUT_MS + 10_000 });
    assert.equal(out.closeCode, 4408, JSON.stringify(out));
    assert.ok(out.closedAfterMs! >= CONNECTION_INIT_TIMEOUT_MS - 100, `closed after ${out.closedAfterMs} ms`);
  });
});
