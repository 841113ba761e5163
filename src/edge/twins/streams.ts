/**
 * Subscription streams: an async iterator fed by pushes (a DataHub subscription, a UNS topic), with
 * a bounded queue (the oldest message is dropped when a client reads too slowly) and a clean-up
 * run once when the client stops, the stream ends or the connection closes.
 */
export interface PushStream<T> extends AsyncIterableIterator<T> {
  push(value: T): void;
  end(error?: Error): void;
}

export function pushStream<T>(cleanup: () => void, maxQueue = 100): PushStream<T> {
  const queue: T[] = [];
  let waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: Error) => void } | undefined;
  let done = false;
  let failure: Error | undefined;
  let cleaned = false;
  const clean = () => {
    if (cleaned) return;
    cleaned = true;
    cleanup();
  };
  const stream: PushStream<T> = {
    push(value) {
      if (done) return;
      if (waiter) {
        const w = waiter;
        waiter = undefined;
        w.resolve({ value, done: false });
      } else {
        if (queue.length >= maxQueue) queue.shift();
        queue.push(value);
      }
    },
    end(error) {
      if (done) return;
      done = true;
      failure = error;
      clean();
      if (waiter && queue.length === 0) {
        const w = waiter;
        waiter = undefined;
        if (error) w.reject(error);
        else w.resolve({ value: undefined, done: true });
      }
    },
    next() {
      if (queue.length > 0) return Promise.resolve({ value: queue.shift()!, done: false });
      if (done) return failure ? Promise.reject(failure) : Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => {
        waiter = { resolve, reject };
      });
    },
    return() {
      done = true;
      queue.length = 0;
      clean();
      if (waiter) {
        const w = waiter;
        waiter = undefined;
        w.resolve({ value: undefined, done: true });
      }
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}
