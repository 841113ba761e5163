/** Sign-in with a user of the UNS's realm (`standalone`): the session cookie and its CSRF token. */
import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../shared/api.js';
import { Field } from '../shared/form.js';
import { ErrorNote } from '../shared/ui.js';
import { post } from './api.js';

export function SignIn(props: { onSignedIn: () => void }) {
  const [v, setV] = useState({ username: 'admin', password: '' });
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Sign in · Millwright UNS';
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await post('/auth/console/login', v);
      props.onSignedIn();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <div class="card">
        <h1>Sign in to the unified namespace</h1>
        <form onSubmit={(e) => void submit(e)} aria-label="Sign in">
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
            <button type="submit" class="btn btn-primary" disabled={busy}>
              {busy ? 'Signing in…' : 'Sign in'}
            </button>
          </div>
        </form>
        <p class="muted">
          Users of the UNS (administrators and operators); the first administrator is{' '}
          <span class="mono">admin</span>, its password printed at the first start.
        </p>
        <ErrorNote error={error} />
      </div>
    </main>
  );
}
