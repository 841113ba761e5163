/**
 * The UNS console's API layer: GraphQL at `/mqtt/gql` and the sign-in routes over the shared
 * `FetchTransport` (the session cookie goes by itself; every POST carries `X-CSRF-Token` from the
 * `csrfToken` cookie). Errors are the clients' `GraphqlError` / `HttpError`, so that the design
 * system's `errorText` shows the API's own message.
 */
import { graphqlData } from '../../src/client/api.js';
import { HttpError } from '../../src/client/errors.js';
import { FetchTransport } from '../../src/client/fetch-transport.js';

const transport = new FetchTransport();

/** Dispatched on `window` when a call answers 401: the app shows the sign-in page. */
export const SIGNED_OUT = 'uns-signed-out';

/** A GraphQL call on the UNS; throws `GraphqlError` with the API's messages. */
export async function gql<T>(query: string, variables?: Record<string, unknown>): Promise<T> {
  const url = `${location.origin}/mqtt/gql`;
  const res = await transport.request('POST', url, { json: { query, ...(variables ? { variables } : {}) } });
  // The session ended (expired, password changed, user deleted): back to the sign-in page.
  if (res.status === 401) dispatchEvent(new Event(SIGNED_OUT));
  return graphqlData<T>(url, res);
}

/** A POST to a REST route (sign-in, sign-out); throws `HttpError` outside 2xx. */
export async function post<T>(path: string, body?: unknown): Promise<T> {
  const url = `${location.origin}${path}`;
  const res = await transport.request('POST', url, body === undefined ? {} : { json: body });
  if (res.status < 200 || res.status > 299) throw new HttpError('POST', url, res.status, res.body, res.text);
  return res.body as T;
}

export type Perm = 'Sub' | 'Pub' | 'PubSub';

export interface Rule {
  id: string;
  path: string;
  perm: Perm;
}

export interface MqttClientInfo {
  id: string;
  connected: boolean;
  protoLevel: number;
  remote: string;
  lastSeen: string;
}

export interface Account {
  id: string;
  username: string;
  acType: string;
  enabled: boolean;
  rules: Rule[];
  clients: MqttClientInfo[];
  createdAt: string;
}

export const ACCOUNT_FIELDS =
  'id username acType enabled createdAt rules { id path perm } clients { id connected protoLevel remote lastSeen }';

export const PERM_OPTIONS = [
  { value: 'PubSub', label: 'PubSub (both)' },
  { value: 'Pub', label: 'Pub (publish)' },
  { value: 'Sub', label: 'Sub (subscribe)' },
];
