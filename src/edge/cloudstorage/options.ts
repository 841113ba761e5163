/** The cloud storage module's settings: part size, retries, bandwidth, periodic sync, bounds. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const cloudstorageOptions = Type.Object({
  cloudstoragePartSize: Option.int({
    minimum: 5,
    maximum: 512,
    default: 8,
    description: 'MiB per part of a multipart upload (files of this size or more are uploaded in parts)',
  }),
  cloudstorageRetries: Option.int({
    minimum: 0,
    maximum: 20,
    default: 5,
    description: 'retries of a failed request to the object storage, with exponential backoff',
  }),
  cloudstorageRetryDelay: Option.int({
    minimum: 10,
    maximum: 60_000,
    default: 1000,
    description: 'ms before the first retry; doubled each retry, at most 30 s',
  }),
  cloudstorageRequestTimeout: Option.int({
    minimum: 1000,
    maximum: 600_000,
    default: 60_000,
    description: 'ms one request to the object storage may take',
  }),
  cloudstorageMaxBytesPerSecond: Option.int({
    minimum: 0,
    maximum: 10_000_000_000,
    default: 0,
    description: 'upload bandwidth limit in bytes per second (0: none)',
  }),
  cloudstorageSyncInterval: Option.int({
    minimum: 0,
    maximum: 604_800,
    default: 0,
    description: 'seconds between two automatic syncs (0: only when asked, POST /cloudstorage/sync)',
  }),
  cloudstorageMaxFiles: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 10_000,
    description: 'files tracked at most (every source together)',
  }),
});
