/**
 * The design system of the consoles: layout with a responsive navigation, buttons, fields with
 * their labels and messages, tables with paging, confirmation dialogs, toasts and the hooks the
 * pages share. Real buttons and links, labelled inputs, one `main` landmark per page.
 */
import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { errorText, type Caller } from './api.js';
import { href } from './router.js';

// --- caller and role ------------------------------------------------------------------------

export const CallerContext = createContext<Caller | null>(null);

/** Whether the caller may change things (admin); a viewer sees no mutation control. */
export function useCanWrite(): boolean {
  return useContext(CallerContext)?.role === 'admin';
}

/** Whether the window matches a media query (`(max-width: 760px)`: the phone layout), kept current. */
export function useMedia(query: string): boolean {
  const [matches, setMatches] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const m = matchMedia(query);
    const on = () => setMatches(m.matches);
    on();
    m.addEventListener('change', on);
    return () => m.removeEventListener('change', on);
  }, [query]);
  return matches;
}

/** The phone layout's media query (the one of styles.css). */
export const NARROW = '(max-width: 760px)';

// --- toasts ---------------------------------------------------------------------------------

interface Toast {
  id: number;
  kind: 'ok' | 'error';
  text: string;
}
let toasts: Toast[] = [];
let toastId = 0;
const toastListeners = new Set<(t: Toast[]) => void>();

export function toast(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const t = { id: ++toastId, kind, text };
  toasts = [...toasts.slice(-4), t];
  toastListeners.forEach((l) => l(toasts));
  setTimeout(
    () => {
      toasts = toasts.filter((x) => x.id !== t.id);
      toastListeners.forEach((l) => l(toasts));
    },
    kind === 'error' ? 10_000 : 5_000,
  );
}

export function toastError(err: unknown): void {
  toast(errorText(err), 'error');
}

/**
 * Runs a page's action (delete, start, rotate...): on success `ok` is toasted (when given) and
 * `then` runs (a reload); a refusal is toasted with the API's own message. Answers whether it ran.
 */
export async function act(run: () => Promise<unknown>, ok?: string, then?: () => void): Promise<boolean> {
  try {
    await run();
  } catch (err) {
    toastError(err);
    return false;
  }
  if (ok) toast(ok);
  then?.();
  return true;
}

export function Toasts() {
  const [list, setList] = useState<Toast[]>(toasts);
  useEffect(() => {
    toastListeners.add(setList);
    return () => void toastListeners.delete(setList);
  }, []);
  // In the (sticky) top bar, so that a toast never covers the page; the latest two are shown.
  return (
    <div class="toasts" role="status" aria-live="polite">
      {list.slice(-2).map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`} title={t.text}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

// --- data loading ---------------------------------------------------------------------------

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` now and whenever `deps` change or `reload` is called; keeps the last data. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState((s) => ({ ...s, error: errorText(err), loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** Calls `fn` every `ms` while the page is visible. */
export function useInterval(fn: () => void, ms: number): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    const t = setInterval(() => {
      if (!document.hidden) saved.current();
    }, ms);
    return () => clearInterval(t);
  }, [ms]);
}

// --- layout ---------------------------------------------------------------------------------

export interface NavItem {
  path: string;
  label: string;
}

export function Layout(props: {
  product: string;
  nav: NavItem[];
  active: string;
  caller: Caller;
  onSignOut: () => void;
  children: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  return (
    <div class="shell">
      {/* The routes are in the hash: the skip link moves the focus itself instead of going to #main. */}
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="topbar">
        <button
          type="button"
          class="nav-toggle"
          aria-expanded={open}
          aria-controls="primary-nav"
          onClick={() => setOpen(!open)}
        >
          Menu
        </button>
        <span class="brand">{props.product}</span>
        <Toasts />
        <span class="who">
          {props.caller.subject} ({props.caller.role})
        </span>
        <button type="button" class="btn btn-quiet" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <nav id="primary-nav" class={open ? 'nav nav-open' : 'nav'} aria-label="Primary">
        <ul>
          {props.nav.map((n) => (
            <li key={n.path}>
              <a
                href={href(n.path)}
                aria-current={props.active === n.path ? 'page' : undefined}
                onClick={() => setOpen(false)}
              >
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        {props.children}
      </main>
    </div>
  );
}

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Millwright edge`;
  }, [props.title]);
  return (
    <>
      <div class="page-head">
        <h1>{props.title}</h1>
        {props.actions && <div class="actions">{props.actions}</div>}
      </div>
      {props.children}
    </>
  );
}

export function Section(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="card" aria-label={props.title}>
      <div class="card-head">
        <h2>{props.title}</h2>
        {props.actions && <div class="actions">{props.actions}</div>}
      </div>
      {props.children}
    </section>
  );
}

/** A figure with its label; `undefined` while it is being measured (shown as such, not as a dash). */
export function Stat(props: { label: string; value: ComponentChildren | undefined; pending?: string }) {
  const pending = props.value === undefined;
  return (
    <div class="stat" aria-busy={pending || undefined}>
      <div class="stat-label">{props.label}</div>
      <div class={pending ? 'stat-value stat-pending' : 'stat-value'}>
        {pending ? (props.pending ?? 'Loading…') : props.value}
      </div>
    </div>
  );
}

export function Badge(props: { tone?: 'ok' | 'warn' | 'bad' | 'info'; children: ComponentChildren }) {
  return <span class={`badge badge-${props.tone ?? 'info'}`}>{props.children}</span>;
}

export function toneOf(state: string): 'ok' | 'warn' | 'bad' | 'info' {
  const s = state.toLowerCase();
  if (/^(ok|running|connected|up|healthy|done|enabled|synced|published|true)/.test(s)) return 'ok';
  if (/(fail|error|down|stopped|disconnected|bad)/.test(s)) return 'bad';
  if (/(start|pending|degraded|unknown|warn)/.test(s)) return 'warn';
  return 'info';
}

export function ErrorNote(props: { error: string | undefined }) {
  if (!props.error) return null;
  return (
    <p class="error-note" role="alert">
      {props.error}
    </p>
  );
}

export function Loading(props: { when: boolean }) {
  return props.when ? <p class="muted">Loading…</p> : null;
}

/** A secret the API shows once (an API client's secret, an access key), until it is dismissed. */
export function OnceSecret(props: {
  what: string;
  lines: { label?: string; value: string }[];
  onDismiss: () => void;
}) {
  return (
    <div class="secret" role="status">
      <p>
        <strong>Copy the {props.what} now: it is shown only once.</strong>
      </p>
      {props.lines.map((l) => (
        <p key={l.value}>
          {l.label && `${l.label}: `}
          <span class="mono">{l.value}</span>
        </p>
      ))}
      <Button onClick={props.onDismiss}>I have copied the {props.what}</Button>
    </div>
  );
}

// --- buttons --------------------------------------------------------------------------------

export function Button(
  props: ButtonHTMLAttributes<HTMLButtonElement> & { kind?: 'primary' | 'danger' | 'quiet' },
) {
  const { kind, class: cls, ...rest } = props;
  return <button type="button" class={`btn ${kind ? `btn-${kind}` : ''} ${cls ?? ''}`} {...rest} />;
}

export function LinkButton(props: { to: string; children: ComponentChildren }) {
  return (
    <a class="btn" href={href(props.to)}>
      {props.children}
    </a>
  );
}
