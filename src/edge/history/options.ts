/** The history module's settings: each is a flag, an environment variable and a config-file key. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const historyOptions = Type.Object({
  history: Option.bool({ default: true, description: 'keep the history of the tags (`/history`)' }),
  historyDatabaseUrl: Option.string({
    default: '',
    description:
      'postgres://... : keep the history in PostgreSQL instead of the embedded DuckDB files in <data-dir>/history/ (scale-out)',
  }),
  historyFlushMs: Option.int({
    minimum: 10,
    maximum: 1000,
    default: 250,
    description:
      'values are written to the store in a batch this often (ms); a crash loses at most this much',
  }),
  historyMaxAgeDays: Option.int({
    minimum: 0,
    maximum: 36_500,
    default: 30,
    description:
      'retention: values older than this many days are deleted (0: kept; the template section overrides it)',
  }),
  historyMaxMb: Option.int({
    minimum: 0,
    maximum: 16_777_216,
    default: 1024,
    description:
      'retention: the store is kept under this many MiB, oldest values first (0: no cap; min 8 otherwise)',
  }),
  historyMemoryMb: Option.int({
    minimum: 32,
    maximum: 65_536,
    default: 256,
    description: "memory limit of the embedded store's engine (MiB)",
  }),
  historyMaxTags: Option.int({
    minimum: 1,
    maximum: 10_000_000,
    default: 1_000_000,
    description: 'tags recorded at most; values of further tags are dropped and counted',
  }),
});
