/** The manager console module's settings: each is a flag, an environment variable and a config-file key. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const managerConsoleOptions = Type.Object({
  console: Option.bool({
    default: true,
    description:
      'serve the manager console (the web UI built by `npm run build` into dist/console/manager) at https://<manager>/ and on the admin port',
  }),
});
