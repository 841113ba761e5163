/**
 * The Modbus family. Pollable in this build: Modbus TCP, RTU over TCP, UDP, RTU and ASCII.
 * Part 2.4 rules held here: `requestTimeoutMs` defaults to 1500 on the nine drivers of the
 * changed-defaults table; the five serial drivers (ELC Serial, ASCII, ASCII Advanced, RTU, RTU
 * Advanced) type `parity` as SignedInteger with 0 None, 1 Even, 2 Odd; RTU over TCP retries twice;
 * the multi-station converter and the metering variant are among the fourteen parity drivers.
 */
import {
  byteOrder,
  driver,
  network,
  parityFourteen,
  parityModbus,
  prop,
  register,
  serialLine,
  stringLength,
  timing,
  type DriverDef,
  type RegisterDef,
} from './types.js';

const WORD = ['int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'float32', 'float64', 'string', 'bit'];

function modbusRegisters(): RegisterDef[] {
  const wordProps = () => [
    byteOrder(),
    stringLength(),
    prop.uint('bit', 'bit of the register for value type bit (0 = least significant)', {
      min: 0,
      max: 15,
      default: 0,
    }),
  ];
  return [
    register('CO', 'coils (read/write bits), function codes 1, 5, 15', [0, 65535], ['bool']),
    register('DI', 'discrete inputs (read-only bits), function code 2', [0, 65535], ['bool']),
    register(
      'HR',
      'holding registers (read/write words), function codes 3, 6, 16',
      [0, 65535],
      WORD,
      wordProps(),
    ),
    register('IR', 'input registers (read-only words), function code 4', [0, 65535], WORD, wordProps()),
  ];
}

const unitId = () => prop.uint('unitId', 'Modbus unit (slave) identifier', { min: 0, max: 255, default: 1 });
const maxBlock = () =>
  prop.uint('maxRegistersPerRequest', 'largest block read in one request, in registers', {
    min: 1,
    max: 125,
    default: 100,
  });

const tcp = (key: string, name: string, description: string, pollable: boolean, retries = 0): DriverDef =>
  driver({
    key,
    name,
    protocol: 'Modbus',
    description,
    pollable,
    properties: [...network(502), unitId(), ...timing({ requestTimeoutMs: 1500, retries }), maxBlock()],
    registers: modbusRegisters(),
  });

const serial = (key: string, name: string, description: string, pollable: boolean, dataBits = 8): DriverDef =>
  driver({
    key,
    name,
    protocol: 'Modbus',
    description,
    pollable,
    properties: [
      ...serialLine(parityModbus(), { dataBits }),
      unitId(),
      ...timing({ requestTimeoutMs: 1500 }),
      maxBlock(),
    ],
    registers: modbusRegisters(),
  });

export const modbusDrivers: DriverDef[] = [
  tcp('modbus-tcp', 'Modbus TCP', 'Modbus over TCP (MBAP header), port 502', true),
  tcp(
    'modbus-rtu-over-tcp',
    'Modbus RTU over TCP',
    'Modbus RTU frames (with CRC) carried over a TCP connection',
    true,
    2,
  ),
  tcp('modbus-udp', 'Modbus UDP', 'Modbus TCP frames carried in UDP datagrams', true),
  serial('modbus-rtu', 'Modbus RTU', 'Modbus RTU on a serial line', true),
  serial('modbus-ascii', 'Modbus ASCII', 'Modbus ASCII on a serial line', true, 7),
  serial(
    'modbus-rtu-advanced',
    'Modbus RTU Advanced',
    'Modbus RTU with per-tag function codes and gateways',
    false,
  ),
  serial(
    'modbus-ascii-advanced',
    'Modbus ASCII Advanced',
    'Modbus ASCII with per-tag function codes',
    false,
    7,
  ),
  serial('elc-serial', 'ELC Serial', 'ELC controllers over their Modbus serial port', false),
  tcp('elc-ethernet', 'ELC Ethernet', 'ELC controllers over Modbus TCP', false),
  driver({
    key: 'modbus-multistation-rtu-to-tcp',
    name: 'Modbus Multi-Station RTU to TCP Converter',
    protocol: 'Modbus',
    description: 'several Modbus RTU stations behind one serial-to-TCP converter',
    pollable: false,
    properties: [
      ...network(502),
      parityFourteen(),
      prop.uint('responseTimeout', 'time to wait for a station to answer, in milliseconds', {
        min: 10,
        max: 60000,
        default: 1500,
      }),
      prop.uint('retryRequestCount', 'retries of a request that got no answer', {
        min: 0,
        max: 10,
        default: 2,
      }),
      maxBlock(),
    ],
    registers: modbusRegisters().map((r) => ({
      ...r,
      properties: [
        ...r.properties,
        prop.uint('stationId', 'RTU station behind the converter', { min: 1, max: 247, default: 1 }),
      ],
    })),
  }),
  driver({
    key: 'modbus-energy-meter-rtu',
    name: 'Modbus Energy Meter RTU',
    protocol: 'Modbus',
    description: 'electricity meters speaking a Modbus RTU variant with metering registers',
    pollable: false,
    properties: [...serialLine(parityFourteen()), unitId(), ...timing()],
    registers: [
      register('ENERGY', 'energy counters (kWh, kvarh)', [0, 9999], ['uint32', 'float32', 'float64']),
      register(
        'INSTANT',
        'instantaneous values (V, A, W, Hz, PF)',
        [0, 9999],
        ['int16', 'uint16', 'int32', 'float32'],
      ),
      register('DEMAND', 'demand values', [0, 9999], ['uint32', 'float32']),
    ],
  }),
];
