/**
 * One cleanup stack per service: whatever started registers how to stop it, and stopping runs
 * the registrations in reverse order, also when start-up fails half way. A failing step is
 * reported and the next one still runs, so that one stuck resource does not leak the others.
 */
import type { Logger } from 'pino';

export interface CleanupStep {
  name: string;
  run: () => Promise<void> | void;
}

export class CleanupStack {
  readonly #steps: CleanupStep[] = [];
  #running: Promise<void> | undefined;

  /** Registers `run` to be called at close, before everything registered earlier. */
  defer(name: string, run: () => Promise<void> | void): void {
    if (this.#running) throw new Error(`cleanup "${name}" registered while closing`);
    this.#steps.push({ name, run });
  }

  /** Runs every step in reverse order, once; later calls answer the same promise. */
  close(logger?: Logger): Promise<void> {
    this.#running ??= (async () => {
      let first: unknown;
      for (const step of this.#steps.reverse()) {
        const began = performance.now();
        try {
          await step.run();
          logger?.debug({ step: step.name, ms: Math.round(performance.now() - began) }, 'closed');
        } catch (err) {
          first ??= err;
          logger?.error({ err, step: step.name }, 'error while closing');
        }
      }
      if (first !== undefined) throw first;
    })();
    return this.#running;
  }
}
