/**
 * The app shell every console shares: asks who is signed in, shows the console's sign-in when
 * nobody is, else the layout with its navigation and the page of the route (`/#/<page>/...`),
 * each page's module loaded on demand so that the first load stays small. A console gives what
 * differs (`ConsoleSpec`): how it asks for the session, its sign-in and sign-out, its pages.
 */
import type { ComponentType, VNode } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Caller } from './api.js';
import { useRoute } from './router.js';
import { CallerContext, Layout, type NavItem } from './ui.js';

export type PageModule = { default: ComponentType<{ parts: string[]; query: URLSearchParams }> };

export interface PageEntry {
  label: string;
  load: () => Promise<PageModule>;
  /** Not in the navigation (reached by a link); `navAs`: the navigation entry it belongs to. */
  nav?: false;
  navAs?: string;
}

export interface ConsoleSpec<S> {
  /** The signed-in session; rejects when nobody is signed in. */
  session: () => Promise<S>;
  signIn: (onSignedIn: () => void) => VNode;
  signOut: (s: S) => Promise<unknown>;
  caller: (s: S) => Caller;
  product: (s: S) => string;
  pages: (s: S) => Record<string, PageEntry>;
  home: (s: S) => string;
  /** Around the signed-in layout (a console's own context). */
  wrap?: (s: S, children: VNode) => VNode;
  /** An event on `window` that ends the session (the API layer saw a 401). */
  signedOutEvent?: string;
}

export function LazyPage(props: {
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

function App<S>(props: { spec: ConsoleSpec<S> }) {
  const { spec } = props;
  const route = useRoute();
  const [session, setSession] = useState<S | null | undefined>(undefined);
  const check = () => spec.session().then(setSession, () => setSession(null));
  useEffect(() => {
    void check();
    if (!spec.signedOutEvent) return;
    const out = () => setSession(null);
    addEventListener(spec.signedOutEvent, out);
    return () => removeEventListener(spec.signedOutEvent!, out);
  }, []);
  if (session === undefined) return <p class="muted">Loading…</p>;
  if (session === null) return spec.signIn(() => void check());
  const pages = spec.pages(session);
  const nav: NavItem[] = Object.entries(pages)
    .filter(([, v]) => v.nav !== false)
    .map(([k, v]) => ({ path: `/${k}`, label: v.label }));
  const name = route.parts[0] ?? spec.home(session);
  const caller = spec.caller(session);
  const signOut = async () => {
    await spec.signOut(session).catch(() => undefined);
    setSession(null);
  };
  const shell: VNode = (
    <CallerContext.Provider value={caller}>
      <Layout
        product={spec.product(session)}
        nav={nav}
        active={`/${pages[name]?.navAs ?? name}`}
        caller={caller}
        onSignOut={() => void signOut()}
      >
        <LazyPage pages={pages} name={name} parts={route.parts.slice(1)} query={route.query} />
      </Layout>
    </CallerContext.Provider>
  );
  return spec.wrap ? spec.wrap(session, shell) : shell;
}

/** Renders the console into `#app`. */
export function mountConsole<S>(spec: ConsoleSpec<S>): void {
  render(<App spec={spec} />, document.getElementById('app')!);
}
