/**
 * The manager console: asks who is signed in (`GET /console/session`; a 401 shows the sign-in),
 * then routes `/#/<page>` to the page's module, loaded on demand. The main port serves the fleet
 * pages; the admin port (`--admin-port`) the API tokens and the users and roles.
 */
import '../shared/styles.css';
import type { ComponentType } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useRoute } from '../shared/router.js';
import { CallerContext, Layout, type NavItem } from '../shared/ui.js';
import { callerOf, get, mrest, type Session } from './api.js';
import { SignIn } from './signin.js';
import { SessionContext } from './session.js';

type PageModule = { default: ComponentType<{ parts: string[]; query: URLSearchParams }> };
interface PageEntry {
  label: string;
  load: () => Promise<PageModule>;
  nav?: false;
}

const MAIN: Record<string, PageEntry> = {
  fleet: { label: 'Fleet', load: () => import('./pages/fleet.js') },
  activation: { label: 'Activation', load: () => import('./pages/activation.js') },
  devices: { label: 'Device', load: () => import('./pages/device.js'), nav: false },
  templates: { label: 'Templates', load: () => import('./pages/templates.js') },
  tasks: { label: 'Tasks', load: () => import('./pages/tasks.js') },
};
const ADMIN: Record<string, PageEntry> = {
  tokens: { label: 'API tokens', load: () => import('./pages/tokens.js') },
  users: { label: 'Users and roles', load: () => import('./pages/users.js') },
};

function LazyPage(props: {
  pages: Record<string, PageEntry>;
  name: string;
  parts: string[];
  query: URLSearchParams;
}) {
  const [mod, setMod] = useState<{ name: string; Page: PageModule['default'] }>();
  const [error, setError] = useState<string>();
  const entry = props.pages[props.name];
  useEffect(() => {
    if (!entry) return;
    entry.load().then(
      (m) => setMod({ name: props.name, Page: m.default }),
      (err: unknown) => setError(String(err)),
    );
  }, [props.name]);
  if (!entry) return <h1>Page not found</h1>;
  if (error) return <p role="alert">Could not load the page: {error}</p>;
  if (!mod || mod.name !== props.name) return <p class="muted">Loading…</p>;
  return <mod.Page parts={props.parts} query={props.query} />;
}

function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  useEffect(() => {
    get<Session>('/console/session').then(setSession, () => setSession(null));
  }, []);
  if (session === undefined) return <p class="muted">Loading…</p>;
  if (session === null) return <SignIn admin={false} />;
  const pages = session.console === 'admin' ? ADMIN : MAIN;
  const nav: NavItem[] = Object.entries(pages)
    .filter(([, v]) => v.nav !== false)
    .map(([k, v]) => ({ path: `/${k}`, label: v.label }));
  const name = route.parts[0] ?? (session.console === 'admin' ? 'tokens' : 'fleet');
  const caller = callerOf(session);
  const signOut = async () => {
    await mrest('POST', '/console/logout').catch(() => undefined);
    setSession(null);
  };
  return (
    <SessionContext.Provider value={session}>
      <CallerContext.Provider value={caller}>
        <Layout
          product={session.console === 'admin' ? 'Millwright manager (admin)' : 'Millwright manager'}
          nav={nav}
          active={`/${name === 'devices' ? 'fleet' : name}`}
          caller={caller}
          onSignOut={signOut}
        >
          <LazyPage pages={pages} name={name} parts={route.parts.slice(1)} query={route.query} />
        </Layout>
      </CallerContext.Provider>
    </SessionContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
