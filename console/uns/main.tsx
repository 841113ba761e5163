/**
 * The UNS console: signs in with the UNS's own users (a session cookie), then routes `/#/<page>`
 * to the page's module, loaded on demand (the shared shell, console/shared/app.tsx).
 */
import '../shared/styles.css';
import type { Caller, Role } from '../shared/api.js';
import { mountConsole, type PageEntry } from '../shared/app.js';
import { gql, post, SIGNED_OUT } from './api.js';
import { SignIn } from './signin.js';

const PAGES: Record<string, PageEntry> = {
  overview: { label: 'Broker', load: () => import('./pages/overview.js') },
  topics: { label: 'Topic tree', load: () => import('./pages/topics.js') },
  accounts: { label: 'Accounts and rules', load: () => import('./pages/accounts.js') },
  clients: { label: 'Connected clients', load: () => import('./pages/clients.js') },
};

/** The signed-in user; an operator reads only (the design system's `viewer`: no mutation control). */
async function whoami(): Promise<Caller> {
  const { me } = await gql<{ me: { username: string; role: string } }>('{ me { username role } }');
  // The role is shown as the UNS names it; only `admin` may change things (useCanWrite).
  return { subject: `user:${me.username}`, role: me.role as Role, scheme: 'cookie' };
}

mountConsole<Caller>({
  session: whoami,
  signIn: (onSignedIn) => <SignIn onSignedIn={onSignedIn} />,
  signOut: () => post('/auth/console/logout'),
  caller: (c) => c,
  product: () => 'Millwright UNS',
  pages: () => PAGES,
  home: () => 'overview',
  signedOutEvent: SIGNED_OUT,
});
