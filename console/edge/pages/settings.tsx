/**
 * Settings: the signed-in user (and the admin's password), API clients (the secret shown once),
 * DataHub access keys (the key shown once), the manager connection (the three `/dm/cloud` steps,
 * with the certificate fingerprint to confirm) and the edge's TLS certificate.
 */
import { useContext, useState } from 'preact/hooks';
import { errorText, rest } from '../../shared/api.js';
import { Confirm, Field } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { Table } from '../../shared/table.js';
import {
  Badge,
  Button,
  CallerContext,
  ErrorNote,
  Page,
  Section,
  toast,
  toastError,
  useCanWrite,
  useLoad,
} from '../../shared/ui.js';
import { ManagerSection } from './settings-manager.js';

interface ApiClient {
  client_id: string;
  name: string;
  role: string;
  createdAt: string;
}

interface AccessKey {
  id: string;
  name: string;
  prefix: string;
  publish: string[] | null;
  subscribe: string[] | null;
  createdAt: string;
}

export default function Settings() {
  const caller = useContext(CallerContext);
  return (
    <Page title="Settings">
      <Section title="Users">
        <p>
          Signed in as <strong>{caller?.subject}</strong> with role <Badge>{caller?.role}</Badge> (
          {caller?.scheme}).
        </p>
        <p class="muted">
          The edge has one user, <span class="mono">admin</span>; other people and programs use API clients
          with the admin or viewer role.
        </p>
        {caller?.subject.startsWith('user:') && <PasswordChange />}
      </Section>
      <ApiClients />
      <AccessKeys />
      <ManagerSection />
      <Section title="TLS certificate">
        <p>
          The edge serves HTTPS with the certificate in{' '}
          <span class="mono">&lt;data-dir&gt;/tls/server.crt</span> (self-signed at first start). Replace that
          file and its key and restart the edge to use your own; the edge has no API to change it.
        </p>
        <p class="muted">
          This page is served over {location.protocol === 'https:' ? 'HTTPS' : 'plain HTTP'}.
        </p>
      </Section>
    </Page>
  );
}

function PasswordChange() {
  const [v, setV] = useState({ currentPassword: '', newPassword: '' });
  const [error, setError] = useState<string>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      await rest('PUT', '/auth/v2/password', v);
      toast('Password changed; other sessions are signed out');
      setV({ currentPassword: '', newPassword: '' });
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <form onSubmit={submit} aria-label="Change the admin password">
      <div class="form-grid">
        <Field
          spec={{ name: 'currentPassword', label: 'Current password', kind: 'password', required: true }}
          value={v.currentPassword}
          onInput={(x) => setV({ ...v, currentPassword: x })}
        />
        <Field
          spec={{ name: 'newPassword', label: 'New password', kind: 'password', required: true }}
          value={v.newPassword}
          onInput={(x) => setV({ ...v, newPassword: x })}
        />
      </div>
      <ErrorNote error={error} />
      <div class="form-actions">
        <button type="submit" class="btn">
          Change password
        </button>
      </div>
    </form>
  );
}

function ApiClients() {
  const canWrite = useCanWrite();
  const list = useLoad(() => rest<{ items: ApiClient[] }>('GET', '/auth/v3/api-clients?limit=200'));
  const [v, setV] = useState({ name: '', role: 'viewer' });
  const [secret, setSecret] = useState<{ client_id: string; client_secret: string }>();
  const [doomed, setDoomed] = useState<ApiClient>();
  const [error, setError] = useState<string>();
  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const c = await rest<{ client_id: string; client_secret: string }>('POST', '/auth/v3/api-clients', v);
      setSecret(c);
      setV({ name: '', role: 'viewer' });
      list.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const rotate = async (c: ApiClient) => {
    try {
      setSecret(await rest('POST', `/auth/v3/api-clients/${c.client_id}/secret`));
    } catch (err) {
      toastError(err);
    }
  };
  const remove = async (c: ApiClient) => {
    try {
      await rest('DELETE', `/auth/v3/api-clients/${c.client_id}`);
      list.reload();
    } catch (err) {
      toastError(err);
    }
  };
  return (
    <Section title="API clients">
      <ErrorNote error={list.error} />
      <Table
        caption="API clients"
        rows={list.data?.items ?? []}
        rowKey={(c) => c.client_id}
        empty="No API client yet."
        columns={[
          { label: 'Name', render: (c) => c.name },
          { label: 'Client ID', render: (c) => <span class="mono">{c.client_id}</span> },
          { label: 'Role', render: (c) => c.role },
          { label: 'Created', render: (c) => fmtTime(c.createdAt) },
          ...(canWrite
            ? [
                {
                  label: 'Actions',
                  render: (c: ApiClient) => (
                    <div class="actions">
                      <Button class="btn-small" onClick={() => void rotate(c)}>
                        New secret for {c.name}
                      </Button>
                      <Button class="btn-small" kind="danger" onClick={() => setDoomed(c)}>
                        Delete {c.name}
                      </Button>
                    </div>
                  ),
                },
              ]
            : []),
        ]}
      />
      {secret && (
        <div class="secret" role="status">
          <p>
            <strong>Copy the secret now: it is shown only once.</strong>
          </p>
          <p>
            Client ID: <span class="mono">{secret.client_id}</span>
          </p>
          <p>
            Client secret: <span class="mono">{secret.client_secret}</span>
          </p>
          <Button onClick={() => setSecret(undefined)}>I have copied the secret</Button>
        </div>
      )}
      {canWrite && (
        <form onSubmit={create} aria-label="New API client" class="row">
          <Field
            spec={{ name: 'name', label: 'Client name', kind: 'text', required: true }}
            value={v.name}
            onInput={(name) => setV({ ...v, name })}
          />
          <Field
            spec={{
              name: 'role',
              label: 'Role',
              kind: 'select',
              required: true,
              options: [
                { value: 'viewer', label: 'viewer (read only)' },
                { value: 'admin', label: 'admin' },
              ],
            }}
            value={v.role}
            onInput={(role) => setV({ ...v, role })}
          />
          <button type="submit" class="btn btn-primary">
            Create API client
          </button>
        </form>
      )}
      <ErrorNote error={error} />
      <Confirm
        title="Delete API client"
        open={!!doomed}
        danger
        confirmLabel="Delete API client"
        onConfirm={() => doomed && void remove(doomed)}
        onClose={() => setDoomed(undefined)}
      >
        <p>Delete {doomed?.name}? Programs using it can no longer sign in.</p>
      </Confirm>
    </Section>
  );
}

function AccessKeys() {
  const canWrite = useCanWrite();
  const list = useLoad(() => rest<{ items: AccessKey[] }>('GET', '/datahub/v1/access-keys?limit=200'));
  const [name, setName] = useState('');
  const [key, setKey] = useState<string>();
  const [error, setError] = useState<string>();
  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const k = await rest<{ key: string }>('POST', '/datahub/v1/access-keys', { name });
      setKey(k.key);
      setName('');
      list.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const remove = async (k: AccessKey) => {
    try {
      await rest('DELETE', `/datahub/v1/access-keys/${k.id}`);
      list.reload();
    } catch (err) {
      toastError(err);
    }
  };
  return (
    <Section title="DataHub access keys">
      <ErrorNote error={list.error} />
      <Table
        caption="DataHub access keys"
        rows={list.data?.items ?? []}
        rowKey={(k) => k.id}
        empty="No access key yet."
        columns={[
          { label: 'Name', render: (k) => k.name },
          { label: 'Key prefix', render: (k) => <span class="mono">{k.prefix}</span> },
          { label: 'Publish', render: (k) => k.publish?.join(', ') ?? 'any' },
          { label: 'Subscribe', render: (k) => k.subscribe?.join(', ') ?? 'any' },
          ...(canWrite
            ? [
                {
                  label: 'Actions',
                  render: (k: AccessKey) => (
                    <Button class="btn-small" kind="danger" onClick={() => void remove(k)}>
                      Revoke {k.name}
                    </Button>
                  ),
                },
              ]
            : []),
        ]}
      />
      {key && (
        <div class="secret" role="status">
          <p>
            <strong>Copy the key now: it is shown only once.</strong>
          </p>
          <p class="mono">{key}</p>
          <Button onClick={() => setKey(undefined)}>I have copied the key</Button>
        </div>
      )}
      {canWrite && (
        <form onSubmit={create} aria-label="New access key" class="row">
          <Field
            spec={{ name: 'keyName', label: 'Key name', kind: 'text', required: true }}
            value={name}
            onInput={setName}
          />
          <button type="submit" class="btn btn-primary">
            Create access key
          </button>
        </form>
      )}
      <ErrorNote error={error} />
    </Section>
  );
}
