/**
 * Write batching for the link: many bridged requests share one TLS connection, and sending each
 * frame on its own costs one TLS record and one system call (which, on loopback, also does the
 * receiver's TCP work) per frame. `holdWrites(socket)` answers a function to call before each
 * send: the first call in a turn of the event loop corks the socket, and the writes leave
 * together once this turn's I/O callbacks have run (`setImmediate`, same loop iteration: no
 * timer, no added wait).
 */
import type { Duplex } from 'node:stream';

export function holdWrites(socket: Duplex | null | undefined): () => void {
  if (!socket || typeof socket.cork !== 'function') return () => {};
  let held = false;
  const release = () => {
    held = false;
    socket.uncork();
  };
  return () => {
    if (held || socket.destroyed) return;
    held = true;
    socket.cork();
    setImmediate(release);
  };
}
