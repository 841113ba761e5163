/**
 * Plain HTTP on an HTTPS port: instead of closing the connection without a word (curl: "Empty
 * reply from server"), answer 400 with a JSON error naming the https:// address to use. The first
 * byte of a connection tells: a TLS handshake starts with 0x16, an HTTP request with a letter.
 */
import type { Server as NetServer, Socket } from 'node:net';
import { ERRORS } from '../errors.js';

export function answerPlainHttpOnTls(server: NetServer, options: { firstByteTimeoutMs: number }): void {
  const tlsListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const onConnection = (socket: Socket, timer: NodeJS.Timeout): void => {
    const first = socket.read(1) as Buffer | null;
    if (first === null) {
      socket.once('readable', () => onConnection(socket, timer));
      return;
    }
    // The TLS server's own timeouts take over from here.
    clearTimeout(timer);
    socket.unshift(first);
    if (first[0] === 0x16 || first[0]! < 0x20 || first[0]! >= 0x7f) {
      for (const l of tlsListeners) l.call(server, socket);
    } else {
      answerHint(socket);
    }
  };
  server.on('connection', (socket: Socket) => {
    // A peer that goes away before its first byte is no error of ours.
    socket.on('error', () => socket.destroy());
    // A peer that sends nothing is closed after the headers timeout, as it would be by the HTTP
    // server: the server's timers start only once the connection is handed to it.
    const timer = setTimeout(() => socket.destroy(), options.firstByteTimeoutMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    onConnection(socket, timer);
  });
}

function answerHint(socket: Socket): void {
  let head = '';
  const reply = (): void => {
    socket.removeAllListeners('data');
    const host = /^host:\s*(\S+)\s*$/im.exec(head)?.[1];
    const path = /^[A-Z]+ (\S+) HTTP\//.exec(head)?.[1] ?? '/';
    const address = host ? `https://${host}${path.startsWith('/') ? path : '/'}` : 'https://';
    const body = JSON.stringify({
      code: ERRORS.httpsRequired.code,
      message: `this port speaks HTTPS, not plain HTTP: use ${address} (curl: -k accepts the self-signed certificate)`,
    });
    socket.end(
      'HTTP/1.1 400 Bad Request\r\n' +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        (host ? `location: ${address}\r\n` : '') +
        'connection: close\r\n\r\n' +
        body,
    );
  };
  const timer = setTimeout(reply, 2000);
  timer.unref();
  socket.on('data', (chunk: Buffer) => {
    head += chunk.toString('latin1');
    if (head.includes('\r\n\r\n') || head.length > 8192) {
      clearTimeout(timer);
      reply();
    }
  });
}
