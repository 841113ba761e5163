/**
 * Other drivers the contract names a rule for: `KeepAlive` defaults to 5 on the Keyence-class
 * nano, Opto-class CONT Ethernet and DX Ethernet drivers; the CNC driver gains register
 * `cnc_rdprgnum`; the gateway module driver gains `publishStat`.
 */
import { WORD_TYPES, driver, keepAlive, network, prop, register, timing, type DriverDef } from './types.js';

export const miscDrivers: DriverDef[] = [
  driver({
    key: 'keyence-nano',
    name: 'Keyence-Class Nano',
    protocol: 'Upper link',
    description: 'compact controllers over the upper-link protocol on TCP',
    pollable: false,
    properties: [...network(8501), keepAlive(5), ...timing()],
    registers: [
      register('DM', 'data memory', [0, 65534], WORD_TYPES),
      register('R', 'relays', [0, 99915], ['bool']),
      register('MR', 'internal relays', [0, 99915], ['bool']),
    ],
  }),
  driver({
    key: 'opto-cont-ethernet',
    name: 'Opto-Class CONT Ethernet',
    protocol: 'CONT protocol',
    description: 'controllers over the CONT protocol on TCP',
    pollable: false,
    properties: [...network(22001), keepAlive(5), ...timing()],
    registers: [
      register('ANALOG', 'analog points', [0, 4095], ['float32', 'int32']),
      register('DIGITAL', 'digital points', [0, 4095], ['bool']),
      register('VAR', 'strategy variables', [0, 4095], ['float32', 'int32', 'string']),
    ],
  }),
  driver({
    key: 'dx-ethernet',
    name: 'DX Ethernet',
    protocol: 'DX',
    description: 'DX-series data acquisition recorders over TCP',
    pollable: false,
    properties: [...network(34260), keepAlive(5), ...timing()],
    registers: [
      register('CH', 'measurement channels', [1, 999], ['float32', 'float64']),
      register('MATH', 'math channels', [1, 300], ['float32', 'float64']),
    ],
  }),
  driver({
    key: 'cnc',
    name: 'CNC',
    protocol: 'CNC',
    description: 'CNC controllers through their Ethernet function library',
    pollable: false,
    properties: [...network(8193), ...timing({ requestTimeoutMs: 5000 })],
    registers: [
      register('cnc_rdprgnum', 'running and main program numbers', null, ['int32']),
      register('cnc_statinfo', 'run, motion and alarm status', null, ['int16', 'string']),
      register('cnc_rdspeed', 'actual feed rate and spindle speed', null, ['int32', 'float64']),
      register('cnc_rdparam', 'a parameter', [0, 65535], ['int32', 'float64']),
      register(
        'pmc_rdpmcrng',
        'PMC data (G, F, X, Y, R, D areas)',
        [0, 65535],
        ['int16', 'uint16', 'int32', 'bool'],
        [
          prop.select(
            'String',
            'area',
            'PMC area',
            [
              ['G', 'G'],
              ['F', 'F'],
              ['X', 'X'],
              ['Y', 'Y'],
              ['R', 'R'],
              ['D', 'D'],
            ],
            { default: 'R' },
          ),
        ],
      ),
    ],
  }),
  driver({
    key: 'gateway-module',
    name: 'Gateway Module',
    protocol: 'Gateway',
    description: 'a protocol gateway module that exposes its mapped data table over TCP',
    pollable: false,
    properties: [
      ...network(2222),
      prop.bool('publishStat', 'publish the module statistics (requests, errors) as tags', {
        default: false,
      }),
      ...timing(),
    ],
    registers: [
      register('IN', 'input data table', [0, 65535], WORD_TYPES),
      register('OUT', 'output data table', [0, 65535], WORD_TYPES),
    ],
  }),
];
