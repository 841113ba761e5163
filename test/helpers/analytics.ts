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

export async function waitFor<T>(fn: () => T | undefined | false, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const CREATE_INSTANCE = `mutation($in: CreateProcessorInstanceRequest!) { CreateProcessorInstance(input: $in) { ID Name Kind Parameters State Error OutputSubject GroupID Position { X Y } } }`;
