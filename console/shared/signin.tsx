/**
 * The signed-out pages' parts every console shares: the card with its title and the API's
 * refusal (`SignInCard`), and the user name and password form (`PasswordForm`, with what a
 * console adds before the fields, such as the edge's identity providers, and beside the button).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Field } from './form.js';
import { ErrorNote } from './ui.js';

export function SignInCard(props: {
  title: string;
  /** The window's title while signed out (`Sign in · Millwright edge`). */
  windowTitle: string;
  error?: string | undefined;
  children: ComponentChildren;
}) {
  useEffect(() => {
    document.title = props.windowTitle;
  }, [props.windowTitle]);
  return (
    <main class="signin" id="main">
      <div class="card">
        <h1>{props.title}</h1>
        {props.children}
        <ErrorNote error={props.error} />
      </div>
    </main>
  );
}

export interface Credentials {
  username: string;
  password: string;
}

export function PasswordForm(props: {
  busy: boolean;
  onSubmit: (v: Credentials) => void;
  /** Fields before the user name (the edge's identity provider). */
  before?: ComponentChildren;
  /** Buttons after Sign in (the edge's "Use an API client"). */
  after?: ComponentChildren;
}) {
  const [v, setV] = useState<Credentials>({ username: 'admin', password: '' });
  return (
    <form
      aria-label="Sign in"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit(v);
      }}
    >
      {props.before}
      <Field
        spec={{ name: 'username', label: 'User name', kind: 'text', required: true }}
        value={v.username}
        onInput={(username) => setV({ ...v, username })}
      />
      <Field
        spec={{ name: 'password', label: 'Password', kind: 'password', required: true }}
        value={v.password}
        onInput={(password) => setV({ ...v, password })}
      />
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={props.busy}>
          {props.busy ? 'Signing in…' : 'Sign in'}
        </button>
        {props.after}
      </div>
    </form>
  );
}
