/** Integrations' settings: the feed of every tag to the local UNS (`millwright up`). */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const integrationsOptions = Type.Object({
  unsFeed: Option.bool({
    default: true,
    description: '`millwright up`: feed every tag to the local UNS through an MQTT integration (made once)',
  }),
  unsFeedPrefix: Option.string({
    default: '',
    description:
      'topic prefix of the UNS feed (default edge/<host name>); tags go to <prefix>/<device>/<tag>',
  }),
});
