/** Digital twins' settings: the UNS broker that UNS attributes read from. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/index.js';

export const twinsOptions = Type.Object({
  unsMqttUrl: Option.optional.url({
    secret: true,
    description: 'mqtt[s]://host:port of the UNS broker that digital twin UNS attributes read from',
  }),
  unsUsername: Option.optional.string({ description: 'UNS broker account of the edge (--uns-mqtt-url)' }),
  unsPassword: Option.optional.string({ secret: true, description: 'password of --uns-username' }),
});
