/**
 * The manager console's API layer: REST calls to the manager's own origin over the consoles'
 * `FetchTransport`, with the session cookie (`mwmSession`, HttpOnly, set after the sign-in through
 * the realm) and the CSRF header from the `mwmCsrfToken` cookie on every mutation. Errors are the
 * client's `HttpError`, so the design system's `errorText` shows the API's own message.
 */
import { HttpError } from '../../src/client/errors.js';
import { FetchTransport, readCookie } from '../../src/client/fetch-transport.js';
import type { Caller } from '../shared/api.js';

const transport = new FetchTransport({ csrfToken: () => readCookie('mwmCsrfToken') });

export async function mrest<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await transport.request(
    method,
    `${location.origin}${path}`,
    body === undefined ? {} : { json: body },
  );
  if (res.status < 200 || res.status >= 300)
    throw new HttpError(method, path, res.status, res.body, res.text);
  return res.body as T;
}

export const get = <T>(path: string) => mrest<T>('GET', path);

export interface Page<T> {
  items: T[];
  total: number;
}

export interface Grant {
  role: 'admin' | 'operator' | 'viewer';
  companyId: string | null;
  projectId: string | null;
}

export interface Session {
  subject: string;
  username: string | null;
  scheme: string;
  grants: Grant[];
  realm: string;
  console: 'main' | 'admin';
}

/** The design system's caller: an admin or an operator somewhere may change things (the API checks the scope). */
export function callerOf(s: Session): Caller {
  const writer = s.grants.some((g) => g.role === 'admin' || g.role === 'operator');
  return { subject: s.username ?? s.subject, role: writer ? 'admin' : 'viewer', scheme: s.scheme };
}

export interface Company {
  id: string;
  companyName: string;
  totalNumOfProjects: number;
  totalNumOfDevices: number;
  createdAt: string;
}

export interface Project {
  id: string;
  name: string;
  companyId: string;
  companyName: string;
  totalNumOfDevices: number;
  createdAt: string;
}

export interface Device {
  id: string;
  name: string;
  prettyName: string | null;
  projectId: string;
  companyId: string;
  online: boolean;
  lastSeen: string | null;
  edgeVersion: string | null;
  host: Record<string, unknown>;
  metrics:
    ({ cpuPercent?: number; memoryBytes?: number; uptimeSeconds?: number } & Record<string, unknown>) | null;
  activatedAt: string;
}

export interface Task {
  taskId: string;
  type: string;
  status: string;
  description: string | null;
  total: number;
  counts: Record<string, number>;
  createdBy: string | null;
  createdAt: string;
  finishedAt: string | null;
}

export interface Subtask {
  subtaskId: string;
  deviceId: string;
  status: string;
  attempts: number;
  error: string | null;
  finishedAt: string | null;
}

export interface Template {
  id: string;
  friendlyName: string;
  templateDescription: string | null;
  version: number;
  sections: string[];
  size: number;
  companyId: string | null;
  projectId: string | null;
  /** A composed template's parts (their versions when it was composed); null: not composed. */
  parts: { id: string; friendlyName: string; version: number }[] | null;
  createdAt: string;
}
