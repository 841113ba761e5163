/**
 * One budget of main-thread time per turn of the event loop for the data plane of every device
 * runner together (publishing reads on the DataHub and everything its subscribers do with them).
 *
 * Each runner used to yield only after `PUBLISH_SLICE_MS` of its own publishing. But the timers
 * of the devices of one interval fire in the same timers phase, where Node runs every expired
 * timer before it polls sockets again: 100 devices of 1,000 tags at 1 s each published in their
 * own turn and their yields resumed together in the next check phase, so the whole second's
 * 100,000 values went out in one stretch of the thread (the edge's profile in bench/devicehub:
 * timers phases of 28 ms median, 600 ms at p90, up to 2 s under load), and an HTTP request (a
 * DeviceHub page) waited behind all of it. With one shared budget, the data plane runs at most
 * `SLICE_MS` (and one check's granule) per turn of the loop, then lets the sockets in.
 */

/** Longest stretch of data-plane work, all devices together, before the event loop turns, ms. */
export const SLICE_MS = 8;

let sliceStart = -Infinity;
let next: Promise<void> | undefined;

function nextTurn(): Promise<void> {
  next ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      next = undefined;
      sliceStart = performance.now();
      resolve();
    }),
  );
  return next;
}

/**
 * Undefined when the data plane may go on in this turn of the loop; else a promise of the next
 * turn, after the sockets were polled (await it, then ask again: the budget of that turn is
 * shared by everyone who waited). A slice is started only by a turn of the loop, never by the
 * first caller that finds the budget spent (it cannot tell a spent budget from an old one), so
 * work found due yields once even after the thread was idle: one `setImmediate`, no delay.
 */
export function dataPlaneWait(): Promise<void> | undefined {
  if (next !== undefined) return next;
  if (performance.now() - sliceStart <= SLICE_MS) return undefined;
  return nextTurn();
}
