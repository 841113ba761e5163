/**
 * The consoles' API layer: the typed edge client of src/client (`EdgeApi`) over `fetch`, with the
 * session cookie (HttpOnly, set by the login route) and the CSRF header on every mutation
 * (`FetchTransport`). Signing in with an API client keeps its token in memory only: nothing
 * secret is written to localStorage or sessionStorage.
 */
import { EdgeApi, type EdgeCredentials } from '../../src/client/api.js';
import { GraphqlError, HttpError, MillwrightClientError } from '../../src/client/errors.js';
import { FetchTransport, readCookie } from '../../src/client/fetch-transport.js';

export type Role = 'admin' | 'viewer';

export interface Caller {
  subject: string;
  role: Role;
  scheme: string;
}

/**
 * Where the edge's API is, below this origin: empty when the edge serves the console itself; the
 * bridge's prefix (`/api/v1/edge/<project>/<device>`) when the manager serves it for one of its
 * edges (its index.html then names it in `<meta name="millwright-api-base">`, and the CSRF
 * cookie of the manager's session in `<meta name="millwright-csrf-cookie">`).
 */
const meta = (name: string) =>
  document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? undefined;
export const API_BASE = meta('millwright-api-base') ?? '';
export const CSRF_COOKIE = meta('millwright-csrf-cookie') ?? 'csrfToken';
const transport = new FetchTransport({ csrfToken: () => readCookie(CSRF_COOKIE) });
let current = new EdgeApi({ url: location.origin + API_BASE, transport });

/** The client every page uses. */
export function edge(): EdgeApi {
  return current;
}

/** Uses `credentials` (an API client, in memory) instead of the session cookie; none: the cookie. */
export function useCredentials(credentials?: EdgeCredentials): void {
  current = new EdgeApi({
    url: location.origin + API_BASE,
    transport,
    ...(credentials ? { credentials } : {}),
  });
}

/** A GraphQL call on one of the edge's endpoints; throws the client's `GraphqlError`. */
export function gql<T>(path: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  return current.graphql<T>(path, query, variables);
}

/** A REST call; throws the client's `HttpError` for a status outside 2xx. */
export function rest<T>(method: string, path: string, body?: unknown): Promise<T> {
  return current.rest<T>(method, path, body);
}

export const PATHS = {
  devicehub: '/devicehub/v2',
  integrations: '/cc/v2',
  opcua: '/opcua/v2',
  analytics: '/analytics/v3',
  twins: '/digital-twins',
} as const;

/** The API's own message(s) of an error, for the user. */
export function errorText(err: unknown): string {
  if (err instanceof GraphqlError) return err.errors.map((e) => e.message).join('; ') || err.message;
  if (err instanceof HttpError) {
    const b = err.body as { message?: unknown; error_description?: unknown } | undefined;
    if (typeof b?.message === 'string') return b.message;
    if (typeof b?.error_description === 'string') return b.error_description;
    return `${err.status}: ${err.text.slice(0, 200)}`;
  }
  if (err instanceof MillwrightClientError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/** The HTTP status behind an error, when there is one. */
export function errorStatus(err: unknown): number | undefined {
  if (err instanceof GraphqlError || err instanceof HttpError) return err.status;
  return undefined;
}
