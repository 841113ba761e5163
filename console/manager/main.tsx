/**
 * The manager console: asks who is signed in (`GET /console/session`; a 401 shows the sign-in),
 * then routes `/#/<page>` to the page's module, loaded on demand (the shared shell,
 * console/shared/app.tsx). The main port serves the fleet pages; the admin port (`--admin-port`)
 * the API tokens and the users and roles.
 */
import '../shared/styles.css';
import { mountConsole, type PageEntry } from '../shared/app.js';
import { callerOf, get, mrest, type Session } from './api.js';
import { SignIn } from './signin.js';
import { SessionContext } from './session.js';

const MAIN: Record<string, PageEntry> = {
  fleet: { label: 'Fleet', load: () => import('./pages/fleet.js') },
  activation: { label: 'Activation', load: () => import('./pages/activation.js') },
  devices: { label: 'Device', load: () => import('./pages/device.js'), nav: false, navAs: 'fleet' },
  templates: { label: 'Templates', load: () => import('./pages/templates.js') },
  tasks: { label: 'Tasks', load: () => import('./pages/tasks.js') },
};
const ADMIN: Record<string, PageEntry> = {
  tokens: { label: 'API tokens', load: () => import('./pages/tokens.js') },
  users: { label: 'Users and roles', load: () => import('./pages/users.js') },
};

const admin = (s: Session) => s.console === 'admin';

mountConsole<Session>({
  session: () => get<Session>('/console/session'),
  signIn: () => <SignIn admin={false} />,
  signOut: () => mrest('POST', '/console/logout'),
  caller: callerOf,
  product: (s) => (admin(s) ? 'Millwright manager (admin)' : 'Millwright manager'),
  pages: (s) => (admin(s) ? ADMIN : MAIN),
  home: (s) => (admin(s) ? 'tokens' : 'fleet'),
  wrap: (s, children) => <SessionContext.Provider value={s}>{children}</SessionContext.Provider>,
});
