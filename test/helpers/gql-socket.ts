/**
 * One GraphQL subscription socket (`graphql-transport-ws`) driven step by step, recording what
 * the server did: refused the upgrade over HTTP, closed the socket (code and reason), or answered
 * `connection_ack` and the subscription's messages.
 */
import WebSocket from 'ws';

export interface SocketOutcome {
  /** The HTTP status of a refused upgrade (401), undefined when the socket opened. */
  httpStatus?: number;
  /** The close code and reason, when the server closed the socket. */
  closeCode?: number;
  closeReason?: string;
  /** Every message received, parsed. */
  messages: { type: string; id?: string; payload?: any }[];
  /** The first `next` or `error` of the subscription, if any. */
  result?: { type: string; payload?: any };
  /** Milliseconds from the socket's opening to its closing by the server. */
  closedAfterMs?: number;
}

export interface SocketScript {
  /** Headers of the upgrade request. */
  headers?: Record<string, string>;
  /** The `connection_init` payload; `null` sends no connection_init at all. */
  init?: Record<string, unknown> | null;
  /** A subscription to start after `connection_ack`. */
  subscribe?: { query: string; variables?: Record<string, unknown> };
  /** Send the subscription before `connection_init` (a protocol violation). */
  subscribeFirst?: boolean;
  /** Give up (and close the socket ourselves) after this long; default 10 s. */
  timeoutMs?: number;
}

/** Runs `script` on a socket to `url` (`wss://host/path`) and answers what happened. */
export async function runSocket(url: string, script: SocketScript): Promise<SocketOutcome> {
  const ws = new WebSocket(url, 'graphql-transport-ws', {
    headers: script.headers ?? {},
    rejectUnauthorized: false,
  });
  const outcome: SocketOutcome = { messages: [] };
  let openedAt = 0;
  let closing = false;
  const close = () => {
    closing = true;
    ws.close();
  };
  const subscribeMessage = () =>
    JSON.stringify({
      id: '1',
      type: 'subscribe',
      payload: { query: script.subscribe!.query, variables: script.subscribe!.variables ?? {} },
    });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      closing = true;
      ws.terminate();
      resolve();
    }, script.timeoutMs ?? 10_000);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    ws.on('unexpected-response', (_req, res) => {
      outcome.httpStatus = res.statusCode;
      ws.terminate();
      done();
    });
    ws.on('error', () => done());
    ws.on('open', () => {
      openedAt = Date.now();
      if (script.subscribeFirst && script.subscribe) ws.send(subscribeMessage());
      if (script.init !== null)
        ws.send(JSON.stringify({ type: 'connection_init', payload: script.init ?? {} }));
    });
    ws.on('message', (data) => {
      const m = JSON.parse(String(data));
      outcome.messages.push(m);
      if (m.type === 'connection_ack') {
        if (script.subscribe && !script.subscribeFirst) ws.send(subscribeMessage());
        else if (!script.subscribe) {
          close();
          done();
        }
      } else if (m.id === '1' && (m.type === 'next' || m.type === 'error')) {
        outcome.result = m;
        close();
        done();
      }
    });
    ws.on('close', (code, reason) => {
      if (!closing) {
        outcome.closeCode = code;
        outcome.closeReason = reason.toString();
        outcome.closedAfterMs = Date.now() - openedAt;
      }
      done();
    });
  });
  return outcome;
}
