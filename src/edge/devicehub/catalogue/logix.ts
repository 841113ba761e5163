/**
 * One PLC vendor family: DF1 and Logix serial (two of the fourteen parity drivers), the Logix
 * Ethernet drivers, and the CIP drivers. Part 2.4 rules held here: `accessMode` defaults to 1 on
 * both Logix Ethernet drivers; the Advanced driver replaced `pollPLCProgramChecksum` by
 * `PLCProgramChangeAction`; Logix Ethernet register R lost `byte` and `dword` and gained array and
 * unsigned value types, and the driver gained `fwVersion` and `PLCProgramChangeAction`; the Logix
 * serial driver gained `readTimeout`; EtherNet/IP's register `DefaultDataFile` defaults to 1; CIP
 * `classId` is unsigned 0-65535, with `serviceType`, `data`, `respDataOffset`, `respDataEndianness`.
 */
import {
  driver,
  keepAlive,
  network,
  parityFourteen,
  prop,
  register,
  serialLine,
  timing,
  type DriverDef,
  type PropertyDef,
} from './types.js';

const LOGIX_SCALARS = ['bool', 'sint', 'int', 'dint', 'lint', 'real', 'lreal', 'string'];
const LOGIX_UNSIGNED = ['usint', 'uint', 'udint', 'ulint'];
const LOGIX_ARRAYS = [
  'bool_array',
  'sint_array',
  'int_array',
  'dint_array',
  'real_array',
  'usint_array',
  'uint_array',
  'udint_array',
];

const tagName = () =>
  prop.string('tagName', 'controller tag, e.g. Program:Main.Counter[3]', { required: true });
const accessMode = () =>
  prop.select(
    'UnsignedInteger',
    'accessMode',
    'how tags are read',
    [
      [0, 'symbolic (by name)'],
      [1, 'symbol instance (by instance id)'],
    ],
    { default: 1 },
  );
const programChangeAction = () =>
  prop.select(
    'String',
    'PLCProgramChangeAction',
    'what to do when the controller program changes',
    [
      ['None', 'keep polling'],
      ['Reload', 'reload the tag symbols'],
      ['Reconnect', 'reconnect'],
    ],
    { default: 'Reload' },
  );
const slot = () => prop.uint('slot', 'backplane slot of the controller', { min: 0, max: 31, default: 0 });

const df1Files = () => [
  register('N', 'integer file', [0, 999], ['int16', 'uint16', 'bool']),
  register('F', 'float file', [0, 999], ['float32']),
  register('B', 'bit file', [0, 999], ['bool', 'uint16']),
  register('T', 'timer file', [0, 999], ['int16', 'bool']),
  register('C', 'counter file', [0, 999], ['int16', 'bool']),
];
const fileNumber = (): PropertyDef =>
  prop.uint('fileNumber', 'data file number', { min: 0, max: 255, default: 7 });

export const logixDrivers: DriverDef[] = [
  driver({
    key: 'df1-serial',
    name: 'DF1 Serial',
    protocol: 'DF1',
    description: 'PLC-5 and SLC controllers over DF1 full duplex',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen()),
      prop.uint('station', 'DF1 station address', { min: 0, max: 254, default: 1 }),
      ...timing(),
    ],
    registers: df1Files().map((r) => ({ ...r, properties: [...r.properties, fileNumber()] })),
  }),
  driver({
    key: 'logix-serial',
    name: 'Logix Serial',
    protocol: 'Logix',
    description: 'Logix controllers over their DF1 serial port',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen()),
      prop.uint('readTimeout', 'time to wait for a read to complete, in milliseconds', {
        min: 10,
        max: 60000,
        default: 2000,
      }),
    ],
    registers: [register('R', 'controller tag', null, LOGIX_SCALARS, [tagName()])],
  }),
  driver({
    key: 'logix-ethernet',
    name: 'Logix Ethernet',
    protocol: 'Logix',
    description: 'ControlLogix and CompactLogix controllers over EtherNet/IP',
    pollable: true,
    browsable: true,
    properties: [
      ...network(44818),
      slot(),
      accessMode(),
      prop.string('fwVersion', 'firmware version of the controller, e.g. 33.011 (empty: detect)', {
        default: '',
      }),
      programChangeAction(),
      ...timing(),
    ],
    registers: [
      register(
        'R',
        'controller tag',
        null,
        [...LOGIX_SCALARS, ...LOGIX_UNSIGNED, ...LOGIX_ARRAYS],
        [
          tagName(),
          prop.uint('arrayLength', 'elements read for an array value type', {
            min: 1,
            max: 4096,
            default: 1,
          }),
        ],
      ),
    ],
  }),
  driver({
    key: 'logix-ethernet-advanced',
    name: 'Logix Ethernet Advanced',
    protocol: 'Logix',
    description: 'Logix controllers with optimized multi-tag reads and program change handling',
    pollable: true,
    browsable: true,
    properties: [...network(44818), slot(), accessMode(), programChangeAction(), ...timing()],
    registers: [register('R', 'controller tag', null, [...LOGIX_SCALARS, ...LOGIX_UNSIGNED], [tagName()])],
  }),
  driver({
    key: 'ethernet-ip-ethernet',
    name: 'EtherNet/IP Ethernet',
    protocol: 'EtherNet/IP',
    description: 'PLC-5 and SLC data files over EtherNet/IP (PCCC)',
    pollable: false,
    properties: [...network(44818), ...timing()],
    registers: df1Files().map((r) => ({
      ...r,
      properties: [
        ...r.properties,
        prop.uint('DefaultDataFile', 'data file used when the address names none', {
          min: 0,
          max: 255,
          default: 1,
        }),
      ],
    })),
  }),
  driver({
    key: 'cip-ethernet',
    name: 'CIP Ethernet',
    protocol: 'CIP',
    description: 'explicit CIP messages to any EtherNet/IP device (class, instance, attribute)',
    pollable: false,
    properties: [...network(44818), keepAlive(60), ...timing()],
    registers: [
      register(
        'ATTR',
        'a CIP attribute or service response',
        null,
        ['uint8', 'int16', 'uint16', 'int32', 'uint32', 'float32', 'string', 'bytes'],
        [
          prop.uint('classId', 'CIP class identifier', { min: 0, max: 65535, required: true }),
          prop.uint('instanceId', 'CIP instance identifier', { min: 0, max: 65535, default: 1 }),
          prop.uint('attributeId', 'CIP attribute identifier', { min: 0, max: 255, default: 1 }),
          prop.select(
            'UnsignedInteger',
            'serviceType',
            'CIP service code',
            [
              [0x0e, 'Get_Attribute_Single'],
              [0x01, 'Get_Attributes_All'],
              [0x10, 'Set_Attribute_Single'],
              [0x4c, 'Read Tag'],
            ],
            { default: 0x0e },
          ),
          prop.string('data', 'request data, hexadecimal bytes (empty for none)', { default: '' }),
          prop.uint('respDataOffset', 'byte offset of the value in the response data', {
            min: 0,
            max: 65535,
            default: 0,
          }),
          prop.select(
            'String',
            'respDataEndianness',
            'byte order of the value in the response',
            [
              ['little', 'little endian'],
              ['big', 'big endian'],
            ],
            { default: 'little' },
          ),
        ],
      ),
    ],
  }),
];
