/**
 * The signal generator: no machine behind it, for demos and tests (the wire notes' test clients
 * create a `Generator` device and a `float64` tag on register `S`). Part 2.4: registers M, S and
 * Ssub take addresses 0-65535 (were 1-32768).
 */
import { driver, prop, register, type DriverDef } from './types.js';

const NUMBERS = ['int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'float32', 'float64'];
const RANGE: [number, number] = [0, 65535];
const signalProps = () => [
  prop.float('amplitude', 'peak value of the signal', { default: 1 }),
  prop.float('offset', 'value added to the signal', { default: 0 }),
  prop.uint('periodMs', 'period of the signal, in milliseconds', {
    min: 10,
    max: 86_400_000,
    default: 10000,
  }),
];

export const generatorDrivers: DriverDef[] = [
  driver({
    key: 'generator',
    name: 'Generator',
    protocol: 'Generator',
    description: 'signal generator: sine, ramp, square, random and constant values, no device needed',
    pollable: true,
    browsable: true,
    properties: [
      prop.uint('seed', 'seed of the random signals, for repeatable runs (0 = random)', {
        min: 0,
        max: 4294967295,
        default: 0,
      }),
    ],
    registers: [
      register('S', 'sine wave', RANGE, NUMBERS, signalProps()),
      register('Ssub', 'sine wave sampled below the poll rate (sub-sampled)', RANGE, NUMBERS, signalProps()),
      register('M', 'memory: holds the last value written, 0 until then', RANGE, [
        ...NUMBERS,
        'bool',
        'string',
      ]),
      register('R', 'ramp (sawtooth) from offset to offset + amplitude', RANGE, NUMBERS, signalProps()),
      register('Q', 'square wave', RANGE, [...NUMBERS, 'bool'], signalProps()),
      register(
        'N',
        'random values, uniform in offset ± amplitude',
        RANGE,
        [...NUMBERS, 'bool'],
        signalProps(),
      ),
      register(
        'K',
        'constant',
        RANGE,
        [...NUMBERS, 'bool', 'string'],
        [prop.string('value', 'the constant value', { default: '0' })],
      ),
    ],
  }),
];
