/**
 * Publish/subscribe drivers. Pollable: `MQTT` (each tag a topic on an external broker, a JSON path
 * into the payload). Part 2.4: the publish/subscribe payload client requires `Namespace` (with a
 * default); the message-protocol driver gains 50 register types and `useGenericSubscribe`.
 */
import { driver, network, prop, register, type DriverDef, type PropertyDef } from './types.js';

const SCALARS = ['bool', 'int64', 'uint64', 'float64', 'string', 'json'];

const broker = (port: number): PropertyDef[] => [
  ...network(port),
  prop.bool('tls', 'connect with TLS', { default: false }),
  prop.string('caCert', 'PEM certificate of the broker CA, for TLS', { default: '' }),
  prop.string('clientId', 'MQTT client identifier (empty: generated)', { default: '' }),
  prop.string('username', 'user name (empty for none)', { default: '' }),
  prop.password('password', 'password of the user', { default: '' }),
  prop.uint('keepAliveSeconds', 'MQTT keep-alive interval', { min: 0, max: 65535, default: 60 }),
];

/**
 * The 50 register types the message-protocol driver gained in 4.4.x. The contract does not name
 * them; Millwright names them after the message classes they read, `MSG_01` to `MSG_50`.
 */
const MESSAGE_TYPES_ADDED = Array.from({ length: 50 }, (_, i) => `MSG_${String(i + 1).padStart(2, '0')}`);

export const mqttDrivers: DriverDef[] = [
  driver({
    key: 'mqtt',
    name: 'MQTT',
    protocol: 'MQTT',
    description: 'subscribes to topics of an external MQTT broker; each tag a topic and a JSON path',
    pollable: true,
    browsable: true,
    properties: broker(1883),
    registers: [
      register('Topic', 'an MQTT topic', null, SCALARS, [
        prop.string('topic', 'topic to subscribe to (no wildcards)', { required: true }),
        prop.string(
          'jsonPath',
          'path of the value in a JSON payload, e.g. $.data.temp (empty: whole payload)',
          { default: '' },
        ),
        prop.select(
          'UnsignedInteger',
          'qos',
          'subscription quality of service',
          [
            [0, 'at most once'],
            [1, 'at least once'],
          ],
          { default: 0 },
        ),
      ]),
    ],
  }),
  driver({
    key: 'pubsub-payload-client',
    name: 'Sparkplug Payload Client',
    protocol: 'MQTT',
    description:
      'publish/subscribe payload client: reads metrics of edge nodes from their birth and data messages',
    pollable: false,
    properties: [
      ...broker(1883),
      prop.string('Namespace', 'topic namespace of the payload specification', {
        required: true,
        default: 'spBv1.0',
      }),
      prop.string('groupId', 'group of the edge nodes to read (empty: all)', { default: '' }),
    ],
    registers: [
      register(
        'Metric',
        'a metric of an edge node or device',
        null,
        [...SCALARS, 'datetime'],
        [
          prop.string('edgeNodeId', 'edge node', { required: true }),
          prop.string('deviceId', 'device of the edge node (empty: the node itself)', { default: '' }),
          prop.string('metricName', 'metric name', { required: true }),
        ],
      ),
    ],
  }),
  driver({
    key: 'message-protocol',
    name: 'Message Protocol Client',
    protocol: 'Message protocol',
    description: 'reads typed messages from a message-oriented device protocol',
    pollable: false,
    properties: [
      ...network(7878),
      prop.bool('useGenericSubscribe', 'subscribe once to every message class instead of per tag', {
        default: false,
      }),
    ],
    registers: [
      register('MSG', 'a message field addressed by message class and field', null, SCALARS, [
        prop.string('messageClass', 'message class', { required: true }),
        prop.string('field', 'field of the message', { required: true }),
      ]),
      ...MESSAGE_TYPES_ADDED.map((name) =>
        register(name, `message class ${name.slice(4)} (added in 4.4.x)`, null, SCALARS, [
          prop.string('field', 'field of the message', { required: true }),
        ]),
      ),
    ],
  }),
];
