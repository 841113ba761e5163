/**
 * The retained messages of a SUBSCRIBE as a stream (`SqlPersistence.createRetainedStreamCombi`).
 * aedes pipes it into a Transform of its own (`through(sendRetained)`, lib/handlers/subscribe.js)
 * whose transform hands each message to the connection (`windowRetainedDelivery`). Through the
 * stream machinery each message cost a `push`, a `data` event, a Transform `write` and its
 * bookkeeping, about as much as sending it (issue 34, h35ret: the retained delivery case). Here
 * `pipe` into a Transform calls its transform for one message after the other instead, as the
 * pipe would: the next one when the callback of the last comes (at once for most: a loop; later
 * when the connection must drain: from that callback). A failed message (its connection gone)
 * ends the delivery. Read any other way, it is a plain object-mode Readable of the same messages.
 */
import { Readable } from 'node:stream';
import type { Packet } from './async-persistence.js';

type TransformFn = (chunk: unknown, encoding: BufferEncoding, done: (err?: Error | null) => void) => void;

export class RetainedReader extends Readable {
  readonly #items: Iterator<Packet>;

  constructor(items: Iterator<Packet>) {
    super({ objectMode: true });
    this.#items = items;
  }

  override _read(): void {
    for (;;) {
      const next = this.#items.next();
      if (next.done) {
        this.push(null);
        return;
      }
      if (!this.push(next.value)) return;
    }
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    const transform = (destination as unknown as { _transform?: unknown })._transform;
    // Only a Transform of nobody else's data, and a stream not read yet.
    if (typeof transform !== 'function' || this.readableFlowing !== null || this.readableLength > 0)
      return super.pipe(destination, options);
    const items = this.#items;
    const fn = transform as TransformFn;
    const step = (): void => {
      for (;;) {
        const next = items.next();
        if (next.done) {
          if (options?.end !== false) destination.end();
          return;
        }
        let sync = true;
        let again = false;
        fn.call(destination, next.value, 'utf8', (err) => {
          if (err) return; // the connection is gone: nothing more to send it
          if (sync) again = true;
          else step();
        });
        sync = false;
        if (!again) return;
      }
    };
    step();
    return destination;
  }
}
