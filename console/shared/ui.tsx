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

export function Toasts() {
  const [list, setList] = useState<Toast[]>(toasts);
  useEffect(() => {
    toastListeners.add(setList);
    return () => void toastListeners.delete(setList);
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`}>
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
      <a class="skip" href="#main">
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
      <Toasts />
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

export function Stat(props: { label: string; value: ComponentChildren }) {
  return (
    <div class="stat">
      <div class="stat-label">{props.label}</div>
      <div class="stat-value">{props.value}</div>
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
