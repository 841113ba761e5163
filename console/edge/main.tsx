/**
 * The edge console: signs in (or resumes the session cookie), then routes `/#/<page>` to the
 * page's module, loaded on demand so that the first load stays small.
 */
import '../shared/styles.css';
import type { ComponentType } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { edge, rest, useCredentials, type Caller } from '../shared/api.js';
import { useRoute } from '../shared/router.js';
import { CallerContext, Layout, type NavItem } from '../shared/ui.js';
import { SignIn } from './signin.js';

type PageModule = { default: ComponentType<{ parts: string[]; query: URLSearchParams }> };

const PAGES: Record<string, { label: string; load: () => Promise<PageModule> }> = {
  overview: { label: 'Overview', load: () => import('./pages/overview.js') },
  devices: { label: 'Devices and tags', load: () => import('./pages/devices.js') },
  live: { label: 'Live values', load: () => import('./pages/live.js') },
  integrations: { label: 'Integrations', load: () => import('./pages/integrations.js') },
  twins: { label: 'Digital twins', load: () => import('./pages/twins.js') },
  opcua: { label: 'OPC UA server', load: () => import('./pages/opcua.js') },
  analytics: { label: 'Analytics', load: () => import('./pages/analytics.js') },
  configuration: { label: 'Configuration', load: () => import('./pages/configuration.js') },
  logs: { label: 'Logs', load: () => import('./pages/logs.js') },
  settings: { label: 'Settings', load: () => import('./pages/settings.js') },
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

function App() {
  const route = useRoute();
  const [caller, setCaller] = useState<Caller | null | undefined>(undefined);
  const check = () =>
    rest<Caller>('GET', '/auth/v3/whoami').then(setCaller, (err: unknown) => {
      // 401: no session; 403: a session that must finish the first-run steps first.
      void err;
      setCaller(null);
    });
  useEffect(() => void check(), []);
  if (caller === undefined) return <p class="muted">Loading…</p>;
  if (caller === null) return <SignIn onSignedIn={() => void check()} />;
  const name = route.parts[0] ?? 'overview';
  const signOut = async () => {
    // The session cookie is HttpOnly: the edge clears it; an API client's token is dropped.
    await edge()
      .request('POST', '/auth/v2/logout')
      .catch(() => undefined);
    useCredentials();
    setCaller(null);
  };
  return (
    <CallerContext.Provider value={caller}>
      <Layout product="Millwright edge" nav={NAV} active={`/${name}`} caller={caller} onSignOut={signOut}>
        <LazyPage name={name} parts={route.parts.slice(1)} query={route.query} />
      </Layout>
    </CallerContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
