/**
 * Serial PLC drivers. Part 2.4 rules held here: the bit-addressed serial PLC driver has its `bit`
 * value type only on registers I_bit, Q_bit, M_bit, R_bit, C_bit and T_bit, with I and Q narrowed
 * to 0-20, M to 0-300 and R to 0-48; the CMP-link serial driver has 28 registers and none of them
 * has `accessType` (the CMP-link Ethernet driver keeps it, and its `KeepAlive` defaults to 5).
 */
import {
  WORD_TYPES,
  driver,
  keepAlive,
  network,
  parityFourteen,
  prop,
  register,
  serialLine,
  timing,
  type DriverDef,
  type RegisterDef,
} from './types.js';

/** Ranges of the bit-addressed serial PLC (4.4.x). C and T are not narrowed by the contract. */
export const BIT_PLC_RANGES: Record<string, [number, number]> = {
  I: [0, 20],
  Q: [0, 20],
  M: [0, 300],
  R: [0, 48],
  C: [0, 127],
  T: [0, 127],
};

const BIT_PLC_WORD_TYPES = ['int16', 'uint16', 'int32', 'uint32', 'float32'];

function bitPlcRegisters(): RegisterDef[] {
  const words = Object.entries(BIT_PLC_RANGES).map(([name, range]) =>
    register(name, `${name} area, word access`, range, BIT_PLC_WORD_TYPES),
  );
  const bits = Object.entries(BIT_PLC_RANGES).map(([name, range]) =>
    register(
      `${name}_bit`,
      `${name} area, bit access`,
      range,
      ['bit'],
      [prop.uint('bit', 'bit of the word', { min: 0, max: 15, default: 0 })],
    ),
  );
  return [...words, ...bits];
}

/** The 28 data areas of the CMP-link protocol (the names are Millwright's; the contract gives the count). */
export const CMP_LINK_AREAS = [
  'X',
  'Y',
  'M',
  'L',
  'F',
  'V',
  'B',
  'D',
  'W',
  'R',
  'ZR',
  'Z',
  'TS',
  'TC',
  'TN',
  'CS',
  'CC',
  'CN',
  'SS',
  'SC',
  'SN',
  'SM',
  'SD',
  'SB',
  'SW',
  'DX',
  'DY',
  'U',
];
const BIT_AREAS = new Set([
  'X',
  'Y',
  'M',
  'L',
  'F',
  'V',
  'B',
  'TS',
  'TC',
  'CS',
  'CC',
  'SS',
  'SC',
  'SM',
  'SB',
  'DX',
  'DY',
]);

function cmpLinkRegisters(withAccessType: boolean): RegisterDef[] {
  return CMP_LINK_AREAS.map((area) =>
    register(
      area,
      `${area} device area`,
      [0, 65535],
      BIT_AREAS.has(area) ? ['bool'] : WORD_TYPES,
      withAccessType
        ? [
            prop.select(
              'String',
              'accessType',
              'read only or read/write',
              [
                ['R', 'read'],
                ['RW', 'read/write'],
              ],
              { default: 'RW' },
            ),
          ]
        : [],
    ),
  );
}

export const serialPlcDrivers: DriverDef[] = [
  driver({
    key: 'bit-addressed-plc-serial',
    name: 'Bit-Addressed PLC Serial',
    protocol: 'Bit-addressed PLC',
    description: 'compact PLCs with bit-addressed I/O, M, R, C and T areas, over a serial line',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen()),
      prop.uint('station', 'station number', { min: 0, max: 31, default: 1 }),
      ...timing(),
    ],
    registers: bitPlcRegisters(),
  }),
  driver({
    key: 'series-a-plc-serial',
    name: 'Series-A PLC Serial',
    protocol: 'Series-A PLC',
    description: 'series-A controllers over their computer-link serial port',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen({ default: 2 }), { dataBits: 7 }),
      prop.uint('station', 'station number', { min: 0, max: 31, default: 0 }),
      ...timing(),
    ],
    registers: [
      register('D', 'data registers', [0, 7999], WORD_TYPES),
      register('X', 'inputs', [0, 377], ['bool']),
      register('Y', 'outputs', [0, 377], ['bool']),
      register('M', 'auxiliary relays', [0, 7679], ['bool']),
    ],
  }),
  driver({
    key: 'cmp-link-serial',
    name: 'CMP-Link Serial',
    protocol: 'CMP-link',
    description: 'CMP-link protocol on a serial line',
    pollable: false,
    properties: [
      ...serialLine(parityFourteen({ default: 1 })),
      prop.uint('station', 'station number', { min: 0, max: 31, default: 0 }),
      ...timing(),
    ],
    registers: cmpLinkRegisters(false),
  }),
  driver({
    key: 'cmp-link-ethernet',
    name: 'CMP-Link Ethernet',
    protocol: 'CMP-link',
    description: 'CMP-link protocol over TCP',
    pollable: false,
    properties: [...network(5007), keepAlive(5), ...timing()],
    registers: cmpLinkRegisters(true),
  }),
];
