/** Test support for analytics: GraphQL on /analytics/v3 and collecting NATS messages. */
import assert from 'node:assert/strict';
import type { NatsConnection } from 'nats';
import { graphql, type TestEdge } from './edge.js';

export const ANALYTICS = '/analytics/v3';

/** Runs a GraphQL request on /analytics/v3 and asserts it had no errors; answers `data`. */
export async function aok(
  t: TestEdge,
  auth: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<any> {
  const r = await graphql(t, ANALYTICS, auth, query, variables);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
  return r.body.data;
}

/** Runs a GraphQL request and answers its first error message (asserting there is one). */
export async function aerr(
  t: TestEdge,
  auth: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<string> {
  const r = await graphql(t, ANALYTICS, auth, query, variables);
  assert.ok(r.body?.errors?.length, `expected an error, got ${r.text}`);
  return r.body.errors[0].message as string;
}

/** Collects the JSON payloads on `subject` until stopped. */
export function collect(nc: NatsConnection, subject: string): { items: any[]; stop(): void } {
  const sub = nc.subscribe(subject);
  const items: any[] = [];
  void (async () => {
    for await (const m of sub) items.push(m.json());
  })();
  return { items, stop: () => sub.unsubscribe() };
}

export const CREATE_INSTANCE = `mutation($in: CreateProcessorInstanceRequest!) { CreateProcessorInstance(input: $in) { ID Name Kind Parameters State Error OutputSubject GroupID Position { X Y } } }`;

/** A GraphQL subscription over WebSocket (graphql-transport-ws) on /analytics/v3. */
export async function subscribe(
  t: TestEdge,
  auth: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<{ items: any[]; errors: any[]; close(): void }> {
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}${ANALYTICS}`, 'graphql-transport-ws', {
    headers: { authorization: auth },
    rejectUnauthorized: false,
  });
  const items: any[] = [];
  const errors: any[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw));
      if (m.type === 'connection_ack') {
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables } }));
        resolve();
      } else if (m.type === 'next') {
        if (m.payload.errors) errors.push(...m.payload.errors);
        else items.push(m.payload.data);
      } else if (m.type === 'error') errors.push(...(Array.isArray(m.payload) ? m.payload : [m.payload]));
    });
  });
  return { items, errors, close: () => ws.close() };
}
