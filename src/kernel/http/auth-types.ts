/**
 * What the kernel's authentication hook attaches to every request, and how routes declare what
 * they need. The hook itself lives with the service's identity module (it knows the credentials);
 * the kernel only fixes the shape so that every module reads it the same way.
 */
/**
 * `operator` is only ever a bridged call's (a manager operator's call through the manager's
 * bridge, see `BridgeActor`): it may change state, except what needs `admin` (the edge's
 * credentials and device management). No credential of a service carries it.
 */
import type { BridgeActor } from '../link/protocol.js';

export type Role = 'admin' | 'operator' | 'viewer';

/** Who made a request. */
export interface AuthContext {
  /** Stable identifier of the caller, e.g. `client:<client_id>`, `token:<id>`, `user:admin`. */
  subject: string;
  role: Role;
  /** How the caller authenticated. */
  scheme: 'bearer' | 'basic' | 'cookie' | 'local';
  /** A call bridged by the manager: who made it there (the role above is capped by theirs). */
  bridged?: BridgeActor;
}

/**
 * Route-level permission, declared as `config: { permission }` on a route:
 * - `public`: no credentials needed (token, login, provider discovery, health, version);
 * - `read`: any authenticated caller (the default for GET and HEAD);
 * - `write`: admin, or a bridged operator (the default for every other method);
 * - `bootstrap`: the admin's first-run session may call it before the EULA is accepted and the
 *   password changed (EULA, password change).
 * GraphQL endpoints are `read`; the GraphQL layer refuses mutations to a viewer itself.
 */
export type Permission = 'public' | 'read' | 'write' | 'bootstrap';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
  }
  interface FastifyContextConfig {
    permission?: Permission;
    /**
     * A WebSocket upgrade of this route may come without credentials and send them in its
     * `connection_init` payload (GraphQL subscriptions; see `socket-auth.ts`).
     */
    socketInitAuth?: boolean;
    /**
     * The manager's audit trail (`src/manager/audit/`): `false` for a route that records nothing
     * (a call another manager forwards, recorded where it was made); an object names the record's
     * action or target when the default (derived from the method and the path) does not fit.
     */
    audit?: false | { action?: string; target?: string };
    /** The module that mounted the route (set by the audit trail's `onRoute` hook). */
    module?: string;
  }
}
