/**
 * aedes-persistence-redis for aedes 1.x: its async persistence answers the stream methods with
 * async generators, where aedes 1.x pipes Readable streams; this wrapper turns them into Readables
 * and passes everything else through.
 */
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import type { AsyncPersistence } from './sql-persistence.js';

const require = createRequire(import.meta.url);
const STREAMS = new Set([
  'createRetainedStream',
  'createRetainedStreamCombi',
  'outgoingStream',
  'streamWill',
  'getClientList',
]);

export function redisPersistence(url: string): AsyncPersistence {
  const RedisPersistence = require('aedes-persistence-redis/asyncPersistence.js') as new (
    url: string,
  ) => AsyncPersistence;
  const inner = new RedisPersistence(url) as unknown as Record<string, unknown>;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (typeof prop === 'string' && STREAMS.has(prop)) {
        return (...args: unknown[]) => {
          const out = fn.apply(target, args);
          return out instanceof Readable ? out : Readable.from(out as AsyncIterable<unknown>);
        };
      }
      // Private fields need the real instance as `this`; keep `setup` an AsyncFunction for aedes.
      return prop === 'setup' ? async (...args: unknown[]) => fn.apply(target, args) : fn.bind(target);
    },
  }) as unknown as AsyncPersistence;
}
