/** What a processor is: the interface every kind implements, what it answers, the numbers it reads. */

export interface Output {
  value: unknown;
  timestamp: number;
  metadata?: Record<string, unknown>;
}

/** Where a processor that answers at once writes its outputs (the runtime publishes each there and then). */
export interface Sink {
  emit(value: unknown, timestamp: number, metadata: Record<string, unknown> | undefined): void;
}

export interface ProcessorContext {
  /** Global variables merged with this instance's component variables. */
  variables(): Record<string, unknown>;
  /** The same as JSON text. */
  variablesJson(): string;
}

export interface Processor {
  /** The outputs, or (a kind that runs off the main loop: scripts) a promise of them, in order. */
  input(
    index: number,
    value: unknown,
    timestamp: number,
    payload: unknown,
  ): Output | Output[] | undefined | Promise<Output | Output[] | undefined>;
  /**
   * The same as `input`, for a kind that answers at once: its outputs go to `out.emit`, in order,
   * instead of into `Output` objects (the runtime's path: no object per output besides the
   * payload it publishes).
   */
  inputTo?(index: number, value: unknown, timestamp: number, payload: unknown, out: Sink): void;
  tick?(now: number): Output | Output[] | undefined;
  /** State worth keeping over a restart (windows longer than a minute). */
  snapshot?(): unknown;
  restore?(state: unknown): void;
  close?(): void;
}

export const num = (v: unknown): number | undefined =>
  typeof v === 'number'
    ? Number.isFinite(v)
      ? v
      : undefined
    : typeof v === 'boolean'
      ? v
        ? 1
        : 0
      : undefined;
