/**
 * The UNS console: signs in with the UNS's own users (a session cookie), then routes `/#/<page>`
 * to the page's module, loaded on demand.
 */
import '../shared/styles.css';
import type { ComponentType } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Caller, Role } from '../shared/api.js';
import { useRoute } from '../shared/router.js';
import { CallerContext, Layout, type NavItem } from '../shared/ui.js';
import { gql, post, SIGNED_OUT } from './api.js';
import { SignIn } from './signin.js';

type PageModule = { default: ComponentType<{ parts: string[]; query: URLSearchParams }> };

const PAGES: Record<string, { label: string; load: () => Promise<PageModule> }> = {
  overview: { label: 'Broker', load: () => import('./pages/overview.js') },
  topics: { label: 'Topic tree', load: () => import('./pages/topics.js') },
  accounts: { label: 'Accounts and rules', load: () => import('./pages/accounts.js') },
  clients: { label: 'Connected clients', load: () => import('./pages/clients.js') },
};

const NAV: NavItem[] = Object.entries(PAGES).map(([k, v]) => ({ path: `/${k}`, label: v.label }));

function LazyPage(props: { name: string; parts: string[]; query: URLSearchParams }) {
  const [mod, setMod] = useState<{ name: string; Page: PageModule['default'] }>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const entry = PAGES[props.name];
    if (!entry) return;
    entry.load().then(
      (m) => setMod({ name: props.name, Page: m.default }),
      (err: unknown) => setError(String(err)),
    );
  }, [props.name]);
  if (!PAGES[props.name]) return <h1>Page not found</h1>;
  if (error) return <p role="alert">Could not load the page: {error}</p>;
  if (!mod || mod.name !== props.name) return <p class="muted">Loading…</p>;
  return <mod.Page parts={props.parts} query={props.query} />;
}

/** The signed-in user; an operator reads only (the design system's `viewer`: no mutation control). */
async function whoami(): Promise<Caller> {
  const { me } = await gql<{ me: { username: string; role: string } }>('{ me { username role } }');
  // The role is shown as the UNS names it; only `admin` may change things (useCanWrite).
  return { subject: `user:${me.username}`, role: me.role as Role, scheme: 'cookie' };
}

function App() {
  const route = useRoute();
  const [caller, setCaller] = useState<Caller | null | undefined>(undefined);
  const check = () => whoami().then(setCaller, () => setCaller(null));
  useEffect(() => {
    void check();
    const out = () => setCaller(null);
    addEventListener(SIGNED_OUT, out);
    return () => removeEventListener(SIGNED_OUT, out);
  }, []);
  if (caller === undefined) return <p class="muted">Loading…</p>;
  if (caller === null) return <SignIn onSignedIn={() => void check()} />;
  const name = route.parts[0] ?? 'overview';
  const signOut = async () => {
    await post('/auth/console/logout').catch(() => undefined);
    setCaller(null);
  };
  return (
    <CallerContext.Provider value={caller}>
      <Layout product="Millwright UNS" nav={NAV} active={`/${name}`} caller={caller} onSignOut={signOut}>
        <LazyPage name={name} parts={route.parts.slice(1)} query={route.query} />
      </Layout>
    </CallerContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
