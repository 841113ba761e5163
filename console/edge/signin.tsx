/**
 * Sign-in: the login form with the edge's identity providers, then the first-run steps the edge
 * asks for (accept the EULA, change the first-run password), each showing the API's own message.
 * Or an API client's credentials, exchanged for a token kept in memory only.
 */
import { useEffect, useState } from 'preact/hooks';
import { errorStatus, errorText, rest, useCredentials } from '../shared/api.js';
import { Field } from '../shared/form.js';
import { PasswordForm, SignInCard } from '../shared/signin.js';

type Step = 'login' | 'eula' | 'password' | 'client';

interface Provider {
  id: string;
  name: string;
  type: string;
}

/** Where the caller stands: signed in, or which first-run step comes next. */
async function nextStep(): Promise<Step | 'done'> {
  try {
    await rest('GET', '/auth/v3/whoami');
    return 'done';
  } catch (err) {
    if (errorStatus(err) !== 403) throw err;
    const eula = await rest<{ version: string; accepted: boolean }>('GET', '/auth/v2/eula');
    return eula.accepted ? 'password' : 'eula';
  }
}

export function SignIn(props: { onSignedIn: () => void; firstRun?: boolean }) {
  const [step, setStep] = useState<Step>('login');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    // A session cookie that still has first-run steps to do resumes at that step; the answer
    // does not undo a step the user chose meanwhile (Use an API client before it came).
    nextStep().then(
      (s) => (s === 'done' ? props.onSignedIn() : setStep((cur) => (cur === 'login' ? s : cur))),
      () => undefined,
    );
  }, []);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      const s = await nextStep();
      if (s === 'done') props.onSignedIn();
      else setStep(s);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <SignInCard title={TITLES[step]} windowTitle="Sign in · Millwright edge" error={error}>
      {step === 'login' && <LoginForm busy={busy} run={run} onClient={() => setStep('client')} />}
      {step === 'client' && <ClientForm busy={busy} run={run} onBack={() => setStep('login')} />}
      {step === 'eula' && <EulaForm busy={busy} run={run} />}
      {step === 'password' && <NewPasswordForm busy={busy} run={run} onError={setError} />}
    </SignInCard>
  );
}

const TITLES: Record<Step, string> = {
  login: 'Sign in to the edge',
  client: 'Sign in with an API client',
  eula: 'Accept the license agreement',
  password: 'Change the first-run password',
};

type Run = (action: () => Promise<void>) => Promise<void>;

function LoginForm(props: { busy: boolean; run: Run; onClient: () => void }) {
  const [providers, setProviders] = useState<Provider[]>([]);
  const [providerId, setProviderId] = useState('');
  useEffect(() => {
    rest<Provider[]>('GET', '/auth/v2/providers').then(
      (list) => {
        setProviders(list);
        setProviderId((x) => x || list[0]?.id || '');
      },
      () => undefined,
    );
  }, []);
  return (
    <PasswordForm
      busy={props.busy}
      onSubmit={(v) =>
        void props.run(async () => {
          useCredentials();
          await rest('POST', '/auth/v2/login', { providerId, ...v });
        })
      }
      before={
        <Field
          spec={{
            name: 'providerId',
            label: 'Identity provider',
            kind: 'select',
            required: true,
            options: providers.map((p) => ({ value: p.id, label: `${p.name} (${p.type})` })),
          }}
          value={providerId}
          onInput={setProviderId}
        />
      }
      after={
        <button type="button" class="btn" onClick={props.onClient}>
          Use an API client
        </button>
      }
    />
  );
}

function ClientForm(props: { busy: boolean; run: Run; onBack: () => void }) {
  const [v, setV] = useState({ clientId: '', clientSecret: '' });
  const submit = (e: Event) => {
    e.preventDefault();
    void props.run(async () => {
      useCredentials({ clientId: v.clientId.trim(), clientSecret: v.clientSecret.trim() });
    });
  };
  return (
    <form onSubmit={submit} aria-label="Sign in with an API client">
      <p class="muted">The token is kept in this tab's memory only; a reload signs out.</p>
      <Field
        spec={{ name: 'clientId', label: 'Client ID', kind: 'text', required: true }}
        value={v.clientId}
        onInput={(clientId) => setV({ ...v, clientId })}
      />
      <Field
        spec={{ name: 'clientSecret', label: 'Client secret', kind: 'password', required: true }}
        value={v.clientSecret}
        onInput={(clientSecret) => setV({ ...v, clientSecret })}
      />
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={props.busy}>
          Sign in with the API client
        </button>
        <button type="button" class="btn" onClick={props.onBack}>
          Back to the login form
        </button>
      </div>
    </form>
  );
}

function EulaForm(props: { busy: boolean; run: Run }) {
  const [eula, setEula] = useState<{ version: string }>();
  const [agree, setAgree] = useState(false);
  useEffect(() => {
    rest<{ version: string }>('GET', '/auth/v2/eula').then(setEula, () => undefined);
  }, []);
  const submit = (e: Event) => {
    e.preventDefault();
    void props.run(async () => {
      await rest('PUT', '/auth/v2/eula', { agree, version: eula?.version ?? '' });
    });
  };
  return (
    <form onSubmit={submit} aria-label="License agreement">
      <p>
        This edge is licensed under the Apache License 2.0 (end-user license agreement version{' '}
        <strong>{eula?.version ?? '…'}</strong>). Accept it to use the edge.
      </p>
      <Field
        spec={{ name: 'agree', label: 'I agree to the license agreement', kind: 'boolean' }}
        value={String(agree)}
        onInput={(x) => setAgree(x === 'true')}
      />
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={props.busy || !eula}>
          Accept and continue
        </button>
      </div>
    </form>
  );
}

function NewPasswordForm(props: { busy: boolean; run: Run; onError: (e: string) => void }) {
  const [v, setV] = useState({ currentPassword: '', newPassword: '', repeat: '' });
  const submit = (e: Event) => {
    e.preventDefault();
    if (v.newPassword !== v.repeat) {
      props.onError('the two new passwords differ');
      return;
    }
    void props.run(async () => {
      await rest('PUT', '/auth/v2/password', {
        currentPassword: v.currentPassword,
        newPassword: v.newPassword,
      });
    });
  };
  return (
    <form onSubmit={submit} aria-label="Change password">
      <p class="muted">The first-run password was printed by the edge when it started.</p>
      <Field
        spec={{ name: 'currentPassword', label: 'Current password', kind: 'password', required: true }}
        value={v.currentPassword}
        onInput={(currentPassword) => setV({ ...v, currentPassword })}
      />
      <Field
        spec={{ name: 'newPassword', label: 'New password', kind: 'password', required: true }}
        value={v.newPassword}
        onInput={(newPassword) => setV({ ...v, newPassword })}
      />
      <Field
        spec={{ name: 'repeat', label: 'Repeat the new password', kind: 'password', required: true }}
        value={v.repeat}
        onInput={(repeat) => setV({ ...v, repeat })}
      />
      <div class="form-actions">
        <button type="submit" class="btn btn-primary" disabled={props.busy}>
          Change password
        </button>
      </div>
    </form>
  );
}
