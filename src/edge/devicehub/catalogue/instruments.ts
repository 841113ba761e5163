/**
 * Instrument drivers: the generic device, the industrial indicator and the scale. Part 2.4: all
 * three are among the fourteen parity drivers, with `parity` at device and at register level, and
 * `KeepAlive` defaults to 5 at device and at register level.
 */
import {
  driver,
  keepAlive,
  parityFourteen,
  prop,
  register,
  serialLine,
  timing,
  type DriverDef,
  type PropertyDef,
} from './types.js';

const TEXT_TYPES = ['string', 'float64', 'int64', 'bool'];
const registerLine = (): PropertyDef[] => [parityFourteen(), keepAlive(5)];
const transport = (): PropertyDef[] => [
  prop.select(
    'String',
    'connectionType',
    'serial line or a TCP serial server',
    [
      ['serial', 'serial'],
      ['tcp', 'TCP'],
    ],
    { default: 'serial' },
  ),
  prop.string('host', 'serial server address, for connectionType tcp', { default: '' }),
  prop.uint('port', 'serial server port, for connectionType tcp', { min: 0, max: 65535, default: 4001 }),
  keepAlive(5),
];

export const instrumentDrivers: DriverDef[] = [
  driver({
    key: 'generic-device',
    name: 'Generic Device',
    protocol: 'Generic ASCII',
    description: 'any device that answers text requests; each tag a request and a parse pattern',
    pollable: false,
    properties: [...serialLine(parityFourteen()), ...transport(), ...timing()],
    registers: [
      register('REQ', 'a request and the pattern that extracts the value from the answer', null, TEXT_TYPES, [
        prop.string('request', 'text sent to the device (\\r and \\n allowed)', { required: true }),
        prop.string('pattern', 'regular expression whose first group is the value', { default: '(.*)' }),
        ...registerLine(),
      ]),
    ],
  }),
  driver({
    key: 'industrial-indicator',
    name: 'Industrial Indicator',
    protocol: 'Indicator',
    description: 'panel indicators and process displays with a serial output',
    pollable: false,
    properties: [...serialLine(parityFourteen()), ...transport(), ...timing()],
    registers: [
      register('PV', 'process value', [0, 15], ['float64', 'int64', 'string'], registerLine()),
      register('STATUS', 'status flags', [0, 15], ['uint16', 'bool'], registerLine()),
    ],
  }),
  driver({
    key: 'scale',
    name: 'Scale',
    protocol: 'Scale',
    description: 'weighing scales and weight indicators (continuous or on-request output)',
    pollable: false,
    properties: [...serialLine(parityFourteen({ default: 2 }), { dataBits: 7 }), ...transport(), ...timing()],
    registers: [
      register('GROSS', 'gross weight', null, ['float64', 'string'], registerLine()),
      register('NET', 'net weight', null, ['float64', 'string'], registerLine()),
      register('TARE', 'tare weight', null, ['float64', 'string'], registerLine()),
      register('STABLE', 'stable-weight flag', null, ['bool'], registerLine()),
    ],
  }),
];
