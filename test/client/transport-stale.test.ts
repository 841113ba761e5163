/**
 * The keep-alive race: a server closes an idle kept-alive connection just as the client sends its
 * next request on it. The transport sends that request again once, on a new connection, instead
 * of failing with "socket hang up" (seen by the driver benches between two of their calls).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Transport } from '../../src/client/transport.js';

test('a request on a kept-alive connection the server closed is sent again on a new one', async () => {
  let connections = 0;
  let answered = 0;
  // Answers the first request of each connection (keep-alive) and closes the connection, without
  // an answer, when a second request comes on it: the server's idle timeout firing as it arrives.
  const server = net.createServer((socket) => {
    connections++;
    let requests = 0;
    socket.on('data', (d) => {
      if (!d.toString('latin1').includes('\r\n\r\n')) return;
      if (++requests > 1) return void socket.destroy();
      answered++;
      socket.write(
        'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}',
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/x`;
  const t = new Transport();
  try {
    assert.equal((await t.request('GET', url)).status, 200);
    const second = await t.request('POST', url, { json: { a: 1 } });
    assert.equal(second.status, 200);
    assert.equal(connections, 2, 'the second request went out again on a new connection');
    assert.equal(answered, 2);
  } finally {
    t.close();
    server.close();
  }
});

test('a reset on a new connection is not retried', async () => {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.on('data', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/x`;
  const t = new Transport();
  try {
    await assert.rejects(t.request('GET', url), /socket hang up|ECONNRESET/);
    assert.equal(connections, 1);
  } finally {
    t.close();
    server.close();
  }
});
