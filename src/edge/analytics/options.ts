/** Analytics' settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const analyticsOptions = Type.Object({
  analyticsPersistInterval: Option.int({
    minimum: 1000,
    maximum: 3_600_000,
    default: 30_000,
    description: 'how often analytics windows longer than a minute save their state, milliseconds',
  }),
  analyticsScriptOutput: Option.int({
    minimum: 1024,
    maximum: 64 * 1024 * 1024,
    default: 1024 * 1024,
    description:
      'output of one script call (one message) at most, characters of JSON, checked inside the isolate before it is copied out',
  }),
  analyticsScriptTestOutput: Option.int({
    minimum: 1024,
    maximum: 256 * 1024 * 1024,
    default: 8 * 1024 * 1024,
    description: 'outputs of one TestProcessorScript call together at most, characters of JSON',
  }),
  analyticsScriptTestTimeout: Option.int({
    minimum: 100,
    maximum: 600_000,
    default: 10_000,
    description: 'wall time of one TestProcessorScript call (all its messages), milliseconds',
  }),
  analyticsScriptTestHeap: Option.int({
    minimum: 32,
    maximum: 4096,
    default: 256,
    description: 'heap of the worker thread that runs TestProcessorScript, MiB',
  }),
  analyticsAiSuiteFileBytes: Option.int({
    minimum: 1024,
    maximum: 64 * 1024 * 1024 * 1024,
    default: 1024 * 1024 * 1024,
    description: 'one AI-suite file (a model, a prompt, an archive being imported) at most, bytes',
  }),
  analyticsAiSuiteTotalBytes: Option.int({
    minimum: 1024,
    maximum: 1024 * 1024 * 1024 * 1024,
    default: 4 * 1024 * 1024 * 1024,
    description:
      'the AI suite on disk at most: stored files plus the declared sizes of open upload sessions, bytes',
  }),
  analyticsAiSuiteSessions: Option.int({
    minimum: 1,
    maximum: 1000,
    default: 16,
    description: 'upload sessions (models and AI-suite files) open at once at most',
  }),
  analyticsAiSuiteSessionIdle: Option.int({
    minimum: 1000,
    maximum: 7 * 24 * 3600_000,
    default: 3600_000,
    description:
      'an upload session that receives nothing for this long expires and its partial file is removed, milliseconds',
  }),
  analyticsAiSuiteChunkBytes: Option.int({
    minimum: 1024,
    maximum: 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    description: 'one chunk of an upload (one PUT with Content-Range) at most, bytes',
  }),
  analyticsProviderTimeout: Option.int({
    minimum: 100,
    maximum: 120_000,
    default: 10_000,
    description: 'deadline of ListProviderModels against a provider endpoint (/v1/models), milliseconds',
  }),
});
