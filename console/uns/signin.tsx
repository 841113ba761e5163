/** Sign-in with a user of the UNS's realm (`standalone`): the session cookie and its CSRF token. */
import { useState } from 'preact/hooks';
import { errorText } from '../shared/api.js';
import { PasswordForm, SignInCard } from '../shared/signin.js';
import { post } from './api.js';

export function SignIn(props: { onSignedIn: () => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <SignInCard title="Sign in to the unified namespace" windowTitle="Sign in · Millwright UNS" error={error}>
      <PasswordForm
        busy={busy}
        onSubmit={(v) => {
          setBusy(true);
          setError(undefined);
          post('/auth/console/login', v)
            .then(props.onSignedIn, (err: unknown) => setError(errorText(err)))
            .finally(() => setBusy(false));
        }}
      />
      <p class="muted">
        Users of the UNS (administrators and operators); the first administrator is{' '}
        <span class="mono">admin</span>, its password printed at the first start.
      </p>
    </SignInCard>
  );
}
