/** The console module's settings: each is a flag, an environment variable and a config-file key. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const consoleOptions = Type.Object({
  console: Option.bool({
    default: true,
    description:
      'serve the edge console (the web UI built by `npm run build` into dist/console/edge) at https://<edge>/',
  }),
});
