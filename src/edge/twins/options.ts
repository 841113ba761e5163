/** Digital twins' settings: the UNS broker that UNS attributes read from, and the expression sandbox's bounds. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const twinsOptions = Type.Object({
  unsMqttUrl: Option.optional.url({
    secret: true,
    description: 'mqtt[s]://host:port of the UNS broker that digital twin UNS attributes read from',
  }),
  unsUsername: Option.optional.string({ description: 'UNS broker account of the edge (--uns-mqtt-url)' }),
  unsPassword: Option.optional.string({ secret: true, description: 'password of --uns-username' }),
  twinsExpressionTimeout: Option.int({
    minimum: 10,
    maximum: 10_000,
    default: 250,
    description:
      'wall time of one JSONata evaluation (transformations, playground), milliseconds; past it the evaluation fails (its worker is replaced if it does not stop)',
  }),
  twinsExpressionDepth: Option.int({
    minimum: 50,
    maximum: 100_000,
    default: 1000,
    description: 'nested evaluation steps (recursion depth) of one JSONata evaluation at most',
  }),
  twinsExpressionOutput: Option.int({
    minimum: 1024,
    maximum: 64 * 1024 * 1024,
    default: 1024 * 1024,
    description: 'output of one JSONata evaluation at most, bytes of JSON',
  }),
  twinsExpressionHeap: Option.int({
    minimum: 16,
    maximum: 4096,
    default: 128,
    description: 'heap of one expression worker thread, MiB; an evaluation that needs more fails',
  }),
  twinsExpressionWorkers: Option.int({
    minimum: 1,
    maximum: 16,
    default: 1,
    description: 'worker threads that evaluate JSONata expressions, off the main loop',
  }),
});
