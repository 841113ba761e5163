/**
 * S5, S7 and S7-200 drivers. Part 2.4: the S5 Ethernet driver gains value type `sint`; the S7
 * driver gains `ReconnectInterval`; the S7-200 serial driver is one of the fourteen parity drivers.
 * The S7 driver polls (src/edge/acquisition/drivers/s7.ts): data blocks, markers, inputs,
 * outputs, timers and counters.
 */
import {
  driver,
  network,
  parityFourteen,
  prop,
  register,
  serialLine,
  stringLength,
  timing,
  type DriverDef,
} from './types.js';

const S7_TYPES = ['bool', 'byte', 'sint', 'int16', 'uint16', 'int32', 'uint32', 'float32', 'string'];
const bit = () => prop.uint('bit', 'bit of the byte for value type bool', { min: 0, max: 7, default: 0 });
const db = () => prop.uint('dbNumber', 'data block number', { min: 1, max: 65535, default: 1 });

export const siemensDrivers: DriverDef[] = [
  driver({
    key: 's5-ethernet',
    name: 'S5 Ethernet',
    protocol: 'S5',
    description: 'S5 controllers through an Ethernet communication processor',
    pollable: false,
    properties: [...network(102), ...timing()],
    registers: [
      register('DB', 'data block words', [0, 2047], ['sint', 'int16', 'uint16', 'int32', 'float32'], [db()]),
      register('M', 'flags', [0, 255], ['bool', 'sint', 'byte', 'int16'], [bit()]),
      register('I', 'inputs', [0, 127], ['bool', 'sint', 'byte'], [bit()]),
      register('Q', 'outputs', [0, 127], ['bool', 'sint', 'byte'], [bit()]),
    ],
  }),
  driver({
    key: 's7',
    name: 'S7',
    protocol: 'S7',
    description: 'S7-300/400/1200/1500 controllers over ISO-on-TCP (PUT/GET access)',
    pollable: true,
    browsable: true,
    properties: [
      ...network(102),
      prop.uint('rack', 'rack of the CPU', { min: 0, max: 7, default: 0 }),
      prop.uint('slot', 'slot of the CPU (S7-300: 2; S7-400: see the hardware; S7-1200/1500: 0 or 1)', {
        min: 0,
        max: 31,
        default: 1,
      }),
      prop.uint('ReconnectInterval', 'seconds to wait before reconnecting after a failure', {
        min: 1,
        max: 3600,
        default: 10,
      }),
      prop.uint(
        'connections',
        'connections the edge opens to the CPU; reads are spread over them, one request in flight on each (1: a single connection)',
        { min: 1, max: 4, default: 2 },
      ),
      prop.string('browseAreas', 'areas a browse lists, e.g. DB1:0-63, M0-15, I0-1, Q0-1, T0-7, C0-7', {
        default: 'DB1:0-63, M0-15, I0-1, Q0-1',
      }),
      ...timing(),
    ],
    registers: [
      register('DB', 'data block', [0, 65535], S7_TYPES, [db(), bit(), stringLength()]),
      register('M', 'markers', [0, 65535], S7_TYPES, [bit(), stringLength()]),
      register('I', 'inputs', [0, 65535], S7_TYPES, [bit(), stringLength()]),
      register('Q', 'outputs', [0, 65535], S7_TYPES, [bit(), stringLength()]),
      register('T', 'timers (value in milliseconds)', [0, 65535], ['uint32']),
      register('C', 'counters', [0, 65535], ['uint16']),
    ],
  }),
  driver({
    key: 's7-200-serial',
    name: 'S7-200 Serial',
    protocol: 'S7',
    description: 'S7-200 controllers over PPI on a serial line',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen({ default: 2 })),
      prop.uint('station', 'PPI station address', { min: 0, max: 126, default: 2 }),
      ...timing(),
    ],
    registers: [
      register('V', 'variable memory', [0, 10239], S7_TYPES, [bit()]),
      register('M', 'markers', [0, 31], S7_TYPES, [bit()]),
      register('I', 'inputs', [0, 15], ['bool', 'byte'], [bit()]),
      register('Q', 'outputs', [0, 15], ['bool', 'byte'], [bit()]),
    ],
  }),
];
