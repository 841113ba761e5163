/**
 * Applications on a real container engine: Debian's Podman answering the Docker Engine API on a
 * unix socket of the test's own (`test/helpers/peers/podman.ts`), an image made with `podman
 * import`, and the edge's `/apps` routes over HTTPS: containers (list, create, inspect, start,
 * stop, remove), applications, networks, images, registries with sealed passwords, the dashboard,
 * the contract's strict trailing slashes (part 7), and the 503 of an edge without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { Podman } from '../helpers/peers/podman.js';
import { eventually, skipUnless } from '../helpers/util.js';

const skip = skipUnless('podman');
if (skip) console.log(`# skipping the container engine suite: ${skip}`);

describe('/apps against podman', { skip }, () => {
  const podman = new Podman();
  let t: TestEdge;
  let auth: { authorization: string };
  const call = (path: string, options: Parameters<TestEdge['call']>[1] = {}) =>
    t.call(path, { ...options, headers: { ...auth, ...options.headers } });

  before(async () => {
    await podman.start();
    podman.importImage('localhost/mw-test:1', { hello: '#!/bin/sh\necho hello\n' });
    t = await startTestEdge({ appsEngineSocket: podman.socket, appsStatsInterval: 1 });
    auth = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  });
  after(async () => {
    await t?.stop();
    await podman.stop();
  });

  test('part 7: the strict trailing slashes, exactly', async () => {
    for (const path of ['/apps', '/apps/dc/containers', '/apps/dc/networks']) {
      const r = await call(path);
      assert.equal(r.status, 404, path);
      assert.equal(r.text, '404 page not found\n', path);
      assert.match(String(r.headers['content-type']), /^text\/plain/, path);
    }
    const images = await call('/apps/images');
    assert.equal(images.status, 400);
    assert.equal(images.body.code, 'bad_request');
    assert.match(images.body.message, /\/apps\/images\//);
    const registries = await call('/apps/registries/');
    assert.equal(registries.status, 404);
    assert.equal(registries.body.code, 'not_found');
    // And the other way round they are the lists.
    for (const path of [
      '/apps/',
      '/apps/dc/containers/',
      '/apps/dc/networks/',
      '/apps/images/',
      '/apps/registries',
    ]) {
      const r = await call(path);
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      assert.ok(Array.isArray(r.body.items), path);
    }
    // Anonymous: refused before anything else.
    assert.equal((await t.call('/apps')).status, 401);
  });

  test('images: the imported image is listed and inspected', async () => {
    const list = await call('/apps/images/');
    const image = list.body.items.find((i: { tags: string[] }) => i.tags.includes('localhost/mw-test:1'));
    assert.ok(image, JSON.stringify(list.body));
    assert.match(image.id, /^sha256:/);
    const one = await call(`/apps/images/${encodeURIComponent('localhost/mw-test:1')}`);
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.id, image.id);
    assert.equal((await call('/apps/images/no-such-image')).status, 404);
  });

  test('containers: create, list, inspect, applications, start (or the engine refusal), stop, remove', async () => {
    const created = await call('/apps/dc/containers/', {
      json: {
        name: 'mw-web',
        image: 'localhost/mw-test:1',
        command: ['/hello'],
        env: { SECRET_TOKEN: 'do-not-show' },
        application: 'line7',
        ports: [{ containerPort: 8080 }],
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.name, 'mw-web');
    assert.equal(created.body.application, 'line7');
    assert.equal(created.body.state, 'created');
    assert.ok(created.body.envNames.includes('SECRET_TOKEN'));
    assert.doesNotMatch(created.text, /do-not-show/);
    const compose = await call('/apps/dc/containers/', {
      json: {
        name: 'mw-db',
        image: 'localhost/mw-test:1',
        command: ['/hello'],
        labels: { 'com.docker.compose.project': 'line7' },
      },
    });
    assert.equal(compose.status, 201, compose.text);

    const list = await call('/apps/dc/containers/?filter=name:startswith:mw-&sort=name:asc');
    assert.deepEqual(
      list.body.items.map((c: { name: string }) => c.name),
      ['mw-db', 'mw-web'],
    );
    assert.equal(list.body.total, 2);
    const one = await call(`/apps/dc/containers/${created.body.id}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.image, 'localhost/mw-test:1');
    assert.equal((await call('/apps/dc/containers/no-such')).status, 404);

    // Both containers form one application (two labels of the same name are two groups).
    const apps = await call('/apps/');
    const names = apps.body.items.map((a: { name: string; label: string }) => `${a.label}:${a.name}`);
    assert.ok(names.includes('millwright.application:line7'), names.join());
    assert.ok(names.includes('com.docker.compose.project:line7'), names.join());

    // A name taken: the engine's 409 passes as a conflict.
    const dup = await call('/apps/dc/containers/', {
      json: { name: 'mw-web', image: 'localhost/mw-test:1', command: ['/hello'] },
    });
    assert.equal(dup.status, 409, dup.text);

    const started = await call(`/apps/dc/containers/mw-web/start`, { method: 'POST' });
    if (started.status === 200) {
      assert.equal(started.body.running || started.body.state === 'exited', true);
    } else {
      // This sandbox refuses setrlimit to the OCI runtime: the caller gets the engine's reason.
      assert.equal(started.status, 502, started.text);
      assert.equal(started.body.code, 'engine_error');
      assert.match(started.body.message, /the container engine refused POST \/containers\/mw-web\/start: /);
      assert.ok(started.body.details.engineMessage.length > 0);
      assert.ok(started.body.message.includes(started.body.details.engineMessage));
      console.log(`# starting a container is refused here, skipped: ${started.body.details.engineMessage}`);
    }
    const stopped = await call(`/apps/dc/containers/mw-web/stop?t=0`, { method: 'POST' });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.running, false);

    // The dashboard lists both, with a bounded history parameter.
    const dash = await call('/apps/overview/dashboard?cpuHistorySeconds=60');
    assert.equal(dash.status, 200, dash.text);
    assert.equal(dash.body.cpuHistorySeconds, 60);
    assert.equal(dash.body.socket, podman.socket);
    assert.ok(dash.body.containers.some((c: { name: string }) => c.name === 'mw-web'));
    assert.ok(dash.body.applications.some((a: { name: string }) => a.name === 'line7'));
    assert.equal(dash.body.totals.containers >= 2, true);
    for (const bad of ['-1', 'abc', '3601', '1.5']) {
      const r = await call(`/apps/overview/dashboard?cpuHistorySeconds=${bad}`);
      assert.equal(r.status, 400, bad);
      assert.match(r.body.message, /cpuHistorySeconds must be an integer from 0 to 3600/);
    }

    for (const id of ['mw-web', 'mw-db']) {
      const del = await call(`/apps/dc/containers/${id}?force=true`, { method: 'DELETE' });
      assert.equal(del.status, 204, del.text);
    }
    assert.equal((await call('/apps/dc/containers/mw-web')).status, 404);
  });

  test('networks: create, list, inspect, remove', async () => {
    const created = await call('/apps/dc/networks/', { json: { name: 'mw-net', subnet: '10.123.0.0/24' } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.subnets, ['10.123.0.0/24']);
    const list = await call('/apps/dc/networks/');
    assert.ok(list.body.items.some((n: { name: string }) => n.name === 'mw-net'));
    assert.equal((await call('/apps/dc/networks/mw-net')).body.id, created.body.id);
    assert.equal((await call('/apps/dc/networks/mw-net', { method: 'DELETE' })).status, 204);
    assert.equal((await call('/apps/dc/networks/mw-net')).status, 404);
  });

  test('registries: schemas, CRUD, the password sealed at rest, and a pull through one', async () => {
    const schemas = await call('/apps/registries/schemas');
    assert.equal(schemas.status, 200);
    for (const e of schemas.body) assert.equal(typeof e.schema.properties.region.minLength, 'number', e.type);
    const ecr = schemas.body.find((e: { type: string }) => e.type === 'ecr');
    assert.equal(ecr.schema.properties.region.minLength, 1);

    const noRegion = await call('/apps/registries', {
      json: { name: 'aws', type: 'ecr', url: '1.dkr.ecr.eu-central-1.amazonaws.com', password: 'x' },
    });
    assert.equal(noRegion.status, 400);
    assert.match(noRegion.body.message, /region is required/);

    const password = 'very-secret-registry-password';
    const created = await call('/apps/registries', {
      json: { name: 'local', type: 'docker', url: '127.0.0.1:9', username: 'bot', password },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.hasPassword, true);
    assert.doesNotMatch(created.text, new RegExp(password));
    const id = created.body.id;
    assert.equal((await call('/apps/registries')).body.total, 1);
    assert.equal((await call(`/apps/registries/${id}`)).body.username, 'bot');
    const updated = await call(`/apps/registries/${id}`, {
      method: 'PUT',
      json: { name: 'local', type: 'docker', url: '127.0.0.1:9', username: 'robot' },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.hasPassword, true, 'a password left out is kept');

    // The database holds no plaintext password (nor any of the edge's database files).
    const db = new SQLite(join(t.dataDir, 'edge.db'), { readonly: true });
    const row = db.prepare('select password_sealed from app_registry').get() as { password_sealed: string };
    db.close();
    assert.match(row.password_sealed, /^v1\./);
    for (const f of ['edge.db', 'edge.db-wal']) {
      try {
        assert.ok(!readFileSync(join(t.dataDir, f)).includes(password), f);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }

    // A pull through the registry reaches the engine with the credentials; nothing listens there.
    const pull = await call('/apps/images/pull', {
      json: { image: '127.0.0.1:9/nothing:1', registryId: id },
    });
    assert.equal(pull.status, 502, pull.text);
    assert.equal(pull.body.code, 'engine_error');
    assert.match(pull.body.message, /could not pull 127\.0\.0\.1:9\/nothing:1/);

    assert.equal((await call(`/apps/registries/${id}`, { method: 'DELETE' })).status, 204);
    assert.equal((await call(`/apps/registries/${id}`)).status, 404);
  });
  test('the engine goes away: 503 naming its socket, the dashboard too; the edge keeps running', async () => {
    assert.equal((await call('/apps/overview/dashboard')).status, 200);
    await podman.stop();
    for (const path of ['/apps/dc/containers/', '/apps/overview/dashboard']) {
      const r = await eventually(
        async () => {
          const x = await call(path);
          return x.status === 503 ? x : false;
        },
        10_000,
        `${path} answering 503`,
      );
      assert.equal(r.body.code, 'engine_unavailable');
      assert.ok(r.body.message.includes(podman.socket), r.body.message);
    }
    assert.equal((await call('/apps/registries')).status, 200);
    assert.equal((await t.call('/health')).status, 200);
  });
});

describe('/apps without an engine', () => {
  let t: TestEdge;
  let auth: { authorization: string };
  before(async () => {
    t = await startTestEdge({ appsEngineSocket: '/nonexistent/mw/docker.sock' });
    auth = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  });
  after(() => t?.stop());

  test('every engine route answers 503 naming the socket; the edge keeps running', async () => {
    for (const path of [
      '/apps/',
      '/apps/dc/containers/',
      '/apps/dc/networks/',
      '/apps/images/',
      '/apps/overview/dashboard',
    ]) {
      const r = await t.call(path, { headers: auth });
      assert.equal(r.status, 503, `${path}: ${r.text}`);
      assert.equal(r.body.code, 'engine_unavailable');
      assert.match(r.body.message, /\/nonexistent\/mw\/docker\.sock/);
    }
    const create = await t.call('/apps/dc/containers/', { headers: auth, json: { image: 'x' } });
    assert.equal(create.status, 503);
    // Registries are the edge's own: they work without an engine.
    assert.equal((await t.call('/apps/registries', { headers: auth })).status, 200);
    assert.equal((await t.call('/health')).status, 200);
  });
});
