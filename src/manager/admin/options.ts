/** The admin console API's listener. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const adminOptions = Type.Object({
  adminPort: Option.port({ default: 8446, description: 'HTTPS port of the admin console API (/admin/v1)' }),
});
