/** The per-request logger is made only when a request writes a line at an enabled level. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../src/kernel/logging/logger.js';
import { lazyRequestLogger } from '../../src/kernel/http/request-logger.js';

test('a request logger makes its child on the first enabled line, with the request id bound', () => {
  const lines: string[] = [];
  const root = createLogger({
    level: 'info',
    component: 'edge',
    destination: { write: (l) => lines.push(l) },
  });
  let children = 0;
  const child = root.child.bind(root);
  root.child = ((b: never, o: never) => {
    children++;
    return child(b, o);
  }) as typeof root.child;

  const log = lazyRequestLogger(root, { reqId: 'req-7' }, {}) as unknown as typeof root;
  assert.equal(log.level, 'info');
  assert.equal(log.isLevelEnabled('debug'), false);
  log.debug({ password: 'x' }, 'not written');
  log.trace('not written');
  assert.equal(children, 0, 'no child for lines below the level');
  assert.equal(lines.length, 0);

  log.warn({ password: 'hunter2' }, 'written');
  log.error('again');
  assert.equal(children, 1, 'one child, made once');
  assert.equal(lines.length, 2);
  const first = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(first.reqId, 'req-7');
  assert.equal(first.msg, 'written');
  assert.equal(first.password, '[redacted]', 'the redaction of the root logger still applies');
  assert.equal(first.component, 'edge');
  assert.deepEqual(log.bindings(), { reqId: 'req-7' });
});
