/** The namespace browser's bounds. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const namespaceOptions = Type.Object({
  maxTopics: Option.int({
    minimum: 1000,
    maximum: 100_000_000,
    default: 1_000_000,
    description: 'topics kept in the namespace browser at most',
  }),
  maxTopicTreeBytes: Option.int({
    minimum: 1_048_576,
    maximum: 68_719_476_736,
    default: 268_435_456,
    description:
      'estimated memory of the namespace browser at most, bytes (topics beyond it are not recorded)',
  }),
});
