/** FINS and host-link drivers: three of the fourteen parity drivers of part 2.4. */
import {
  WORD_TYPES,
  driver,
  network,
  parityFourteen,
  prop,
  register,
  serialLine,
  timing,
  type DriverDef,
} from './types.js';

const areas = () => [
  register('DM', 'data memory', [0, 32767], WORD_TYPES),
  register('CIO', 'core I/O', [0, 6143], [...WORD_TYPES, 'bool']),
  register('WR', 'work area', [0, 511], [...WORD_TYPES, 'bool']),
  register('HR', 'holding area', [0, 1535], [...WORD_TYPES, 'bool']),
];
const node = () =>
  prop.uint('destinationNode', 'FINS node number of the controller', { min: 0, max: 254, default: 0 });

export const finsDrivers: DriverDef[] = [
  driver({
    key: 'fins-ethernet',
    name: 'FINS Ethernet',
    protocol: 'FINS',
    description: 'FINS over UDP or TCP, also through a serial gateway (hence the line settings)',
    pollable: false,
    properties: [...network(9600), node(), parityFourteen(), ...timing()],
    registers: areas(),
  }),
  driver({
    key: 'fins-serial',
    name: 'FINS Serial',
    protocol: 'FINS',
    description: 'FINS frames on a serial line',
    pollable: false,
    properties: [...serialLine(parityFourteen({ default: 2 }), { dataBits: 7 }), node(), ...timing()],
    registers: areas(),
  }),
  driver({
    key: 'host-link',
    name: 'Host Link',
    protocol: 'Host Link',
    description: 'host-link (C-mode) commands on a serial line',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen({ default: 2 }), { dataBits: 7 }),
      prop.uint('unit', 'host-link unit number', { min: 0, max: 31, default: 0 }),
      ...timing(),
    ],
    registers: areas(),
  }),
];
