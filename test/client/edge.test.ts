/**
 * EdgeClient against a real edge: token exchange and renewal (a 2-second token lifetime, so that
 * renewal is real), REST and GraphQL with typed errors, certificates, and the DataHub over NATS
 * (local, and remote with an access key over TLS).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StringCodec } from 'nats';
import {
  AuthenticationError,
  ConnectionError,
  EdgeClient,
  GraphqlError,
  HttpError,
} from '../../src/client/index.js';
import { bootstrapAdmin, clientToken, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { sleep } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

describe('EdgeClient', () => {
  let t: TestEdge;
  let creds: { clientId: string; clientSecret: string };
  const clients: EdgeClient[] = [];
  const client = (options: Partial<ConstructorParameters<typeof EdgeClient>[0]> = {}) => {
    const c = new EdgeClient({ url: t.url, credentials: creds, insecure: true, ...options });
    clients.push(c);
    return c;
  };

  before(async () => {
    // Tokens live 2 seconds: renewal happens within the test, against the edge's own expiry.
    t = await startTestEdge({ tokenTtl: 2, datahubTrustLocal: false, logLevel: 'error' });
    const c = await clientToken(t, await bootstrapAdmin(t));
    creds = { clientId: c.clientId, clientSecret: c.secret };
  });
  after(async () => {
    for (const c of clients) c.close();
    await t.stop();
  });

  test('exchanges the client credentials once, and renews the token before it expires', async () => {
    const edge = client();
    const first = await edge.token();
    assert.equal(await edge.token(), first, 'the held token is reused');
    assert.equal(edge.exchanges, 1);
    const lifetime = edge.tokenExpiresAt! - Date.now();
    assert.ok(lifetime > 1000 && lifetime <= 2000, `lifetime ${lifetime} ms`);
    // Concurrent calls share one exchange.
    await Promise.all([edge.rest('GET', '/devicehub/version'), edge.rest('GET', '/devicehub/version')]);
    assert.equal(edge.exchanges, 1);

    // Time is the test: the 2 s token expires.
    await sleep(2500);
    // The first token has expired on the edge itself...
    const stale = await edge.request('GET', '/devicehub/version', {
      headers: { authorization: `Bearer ${first}` },
    });
    assert.equal(stale.status, 401);
    // ...and the client renewed before using it again.
    const version = await edge.rest('GET', '/devicehub/version');
    assert.equal(typeof version.version, 'string');
    assert.equal(edge.exchanges, 2);
    assert.notEqual(await edge.token(), first);
  });

  test('a token refused with 401 is exchanged again once and the request repeated', async () => {
    // A negative margin keeps the token past its expiry: the edge refuses it, the client renews.
    const edge = client({ renewBeforeMs: -5000 });
    await edge.token();
    // Time is the test: the 2 s token expires.
    await sleep(2300);
    const res = await edge.request('GET', '/devicehub/version');
    assert.equal(res.status, 200);
    assert.equal(edge.exchanges, 2);
  });

  test('bad client credentials: AuthenticationError with the OAuth error', async () => {
    const edge = client({ credentials: { clientId: creds.clientId, clientSecret: 'mws_wrong' } });
    await assert.rejects(edge.token(), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError);
      assert.equal(err.status, 401);
      assert.equal(err.error, 'invalid_client');
      return true;
    });
  });

  test('a given bearer token and a legacy API token', async () => {
    // (The admin's session has expired by now: tokens live 2 seconds here.)
    const { token } = await client().rest('POST', '/auth/v3/api-tokens', { name: 'legacy', role: 'viewer' });
    const legacy = client({ credentials: { apiToken: token } });
    assert.match((await legacy.authorization())!, /^Basic /);
    assert.equal((await legacy.rest('GET', '/devicehub/version')).version.length > 0, true);
    const bearer = client({ credentials: { bearer: token } });
    assert.equal((await bearer.request('GET', '/devicehub/version')).status, 200);
    const none = client({ credentials: undefined });
    assert.equal((await none.request('GET', '/devicehub/version')).status, 401);
    assert.equal((await none.request('GET', '/health')).status, 200);
  });

  test('REST: HttpError carries status, code and message of the error body', async () => {
    const edge = client();
    const created = await edge.rest('POST', '/auth/v3/api-clients', { name: 'by-client', role: 'viewer' });
    assert.match(created.client_id, /^[0-9a-f-]{36}$/);
    await assert.rejects(
      edge.rest('POST', '/auth/v3/api-clients', { name: 'x', bogus: 1 }),
      (err: unknown) => {
        assert.ok(err instanceof HttpError);
        assert.equal(err.status, 400);
        assert.equal(err.code, ERRORS.unknownField.code);
        assert.match(err.message, /unknown field "bogus"/);
        return true;
      },
    );
    await assert.rejects(edge.rest('GET', '/auth/v3/api-clients/00000000-0000-0000-0000-000000000000'), {
      name: 'HttpError',
      status: 404,
    });
  });

  test('GraphQL: data, and GraphqlError for validation errors (400), resolver errors (200) and 401', async () => {
    const edge = client();
    const data = await edge.graphql(
      '/devicehub/v2',
      'query($in: ListDevicesRequest) { ListDevices(input: $in) { Total } }',
      {
        in: { Limit: 1 },
      },
    );
    assert.deepEqual(data, { ListDevices: { Total: 0 } });
    await assert.rejects(edge.graphql('/devicehub/v2', '{ ListDevices { Nope } }'), (err: unknown) => {
      assert.ok(err instanceof GraphqlError);
      assert.equal(err.status, 400);
      assert.match(err.errors[0]!.message, /Cannot query field "Nope"/);
      return true;
    });
    await assert.rejects(
      edge.graphql(
        '/devicehub/v2',
        'mutation { CreateDevice(input: { Name: "x", DriverID: "No Such Driver" }) { ID } }',
      ),
      (err: unknown) => {
        assert.ok(err instanceof GraphqlError);
        assert.equal(err.status, 200);
        assert.equal(err.code, ERRORS.badRequest.code);
        return true;
      },
    );
    const anonymous = client({ credentials: undefined });
    await assert.rejects(anonymous.graphql('/devicehub/v2', '{ ListDevices { Total } }'), {
      name: 'GraphqlError',
      status: 401,
    });
  });

  test('certificates: refused unless the CA is given or insecure is asked for', async () => {
    const strict = client({ insecure: false, credentials: undefined });
    await assert.rejects(strict.request('GET', '/health'), (err: unknown) => {
      assert.ok(err instanceof ConnectionError);
      assert.match(String((err.cause as Error).message), /self-signed|certificate/i);
      return true;
    });
    const ca = readFileSync(join(t.dataDir, 'tls', 'server.crt'));
    // The certificate names localhost; the test edge listens on 127.0.0.1.
    const withCa = client({ insecure: false, ca, url: t.url.replace('127.0.0.1', 'localhost') });
    assert.equal((await withCa.rest('GET', '/devicehub/version')).version.length > 0, true);
  });

  test('NATS: an access key over TLS (remote path), refused without one', async () => {
    const edge = client({ natsUrl: t.edge.datahub.gateway!.url });
    const { key } = await edge.rest('POST', '/datahub/v1/access-keys', { name: 'client-test' });
    const nc = await edge.nats({ accessKey: key, connect: { name: 'client-test' } });
    try {
      const sc = StringCodec();
      const sub = nc.subscribe('devicehub.raw.>', { max: 1 });
      await nc.flush();
      nc.publish('devicehub.raw.Gen1.S', sc.encode('42'));
      for await (const m of sub) assert.equal(sc.decode(m.data), '42');
      const conn = t.edge.datahub.connections().find((c) => c.name === 'client-test')!;
      assert.equal(conn.tls, true);
      assert.equal(conn.accessKey?.name, 'client-test');
    } finally {
      await nc.close();
    }
    await assert.rejects(edge.nats({ accessKey: 'mwk_wrong' }), { name: 'AuthenticationError' });
  });
});
