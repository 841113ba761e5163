/**
 * The Generator driver: signals computed from the clock, no machine behind it. Registers: `S`
 * sine, `Ssub` sine held for a tenth of its period, `R` ramp, `Q` square, `N` random (seeded
 * with the device's `seed`, 0 = random), `K` constant (`value` property), `M` memory (holds what
 * was written, 0 until then). Every address of a signal register gives the same signal shifted
 * by `address / 64` of a period, so neighbouring tags differ.
 */
import { coerce, numberAs } from '../convert.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type TagValue,
} from '../types.js';

/** mulberry32: a small seeded generator, enough for test signals. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function signal(
  register: string,
  props: Record<string, string>,
  now: number,
  random: () => number,
): number {
  const amplitude = Number(props.amplitude ?? 1);
  const offset = Number(props.offset ?? 0);
  const period = Math.max(Number(props.periodMs ?? 10000), 1);
  const address = Number(props.address ?? 0);
  const phase = (((now / period + address / 64) % 1) + 1) % 1;
  switch (register) {
    case 'S':
      return offset + amplitude * Math.sin(2 * Math.PI * phase);
    case 'Ssub': {
      const held = Math.floor(phase * 10) / 10;
      return offset + amplitude * Math.sin(2 * Math.PI * held);
    }
    case 'R':
      return offset + amplitude * phase;
    case 'Q':
      return phase < 0.5 ? offset + amplitude : offset - amplitude;
    case 'N':
      return offset + amplitude * (2 * random() - 1);
    default:
      return 0;
  }
}

class GeneratorSession implements DriverSession {
  readonly #memory = new Map<string, TagValue>();
  readonly #random: () => number;

  constructor(device: DeviceSpec) {
    const seed = Number(device.props.seed ?? 0);
    this.#random = seed > 0 ? seeded(seed) : Math.random;
  }

  async connect(): Promise<void> {}
  async close(): Promise<void> {}

  async read(tags: readonly TagSpec[]): Promise<ReadResult[]> {
    const now = Date.now();
    return tags.map((tag) => {
      if (tag.register === 'M') {
        const v = this.#memory.get(tag.props.address ?? '0');
        return v ?? (tag.valueType === 'string' ? '' : tag.valueType === 'bool' ? false : 0);
      }
      if (tag.register === 'K') {
        try {
          return coerce(tag.props.value ?? '0', tag.valueType);
        } catch (err) {
          return new ReadFailure(`property value: ${(err as Error).message}`);
        }
      }
      const n = signal(tag.register, tag.props, now, this.#random);
      if (tag.valueType === 'bool') return tag.register === 'Q' ? n > Number(tag.props.offset ?? 0) : n > 0;
      return numberAs(n, tag.valueType);
    });
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    if (tag.register !== 'M')
      throw new Error(`register ${tag.register} of the Generator is read-only; write to M`);
    this.#memory.set(tag.props.address ?? '0', value as TagValue);
  }
}

export const generatorDriver: DriverFactory = {
  key: 'generator',
  create: (device) => new GeneratorSession(device),
};
