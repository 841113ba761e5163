/** The DeviceHub's settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const devicehubOptions = Type.Object({
  devicehubCsvMaxBytes: Option.int({
    minimum: 1024,
    maximum: 1_073_741_824,
    default: 67_108_864,
    description: 'largest CSV file UploadCsv accepts, bytes (a larger one is refused whole)',
  }),
});
