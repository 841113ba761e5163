/** The task runner's settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const tasksOptions = Type.Object({
  taskConcurrency: Option.int({
    minimum: 1,
    maximum: 10_000,
    default: 64,
    description: 'subtasks (e.g. one template apply on one edge) this process runs at once',
  }),
  taskLease: Option.int({
    minimum: 1000,
    maximum: 3_600_000,
    default: 15_000,
    description:
      "milliseconds a claimed subtask stays claimed without renewal; a stopped manager's claims are taken over after it",
  }),
});
