/**
 * Settings: the signed-in user (and the admin's password), API clients (the secret shown once),
 * DataHub access keys (the key shown once), the manager connection (the three `/dm/cloud` steps,
 * with the certificate fingerprint to confirm) and the edge's TLS certificate.
 */
import { useContext, useState } from 'preact/hooks';
import { errorText, rest } from '../../shared/api.js';
import {
  useConfirm,
  Field,
  initialValues,
  SchemaForm,
  type FieldSpec,
  type FormValues,
} from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { ListSection } from '../../shared/table.js';
import {
  act,
  Badge,
  Button,
  CallerContext,
  ErrorNote,
  Page,
  OnceSecret,
  Section,
  toast,
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

const CLIENT_FIELDS: FieldSpec[] = [
  { name: 'name', label: 'Client name', kind: 'text', required: true },
  {
    name: 'role',
    label: 'Role',
    kind: 'select',
    required: true,
    default: 'viewer',
    options: [
      { value: 'viewer', label: 'viewer (read only)' },
      { value: 'admin', label: 'admin' },
    ],
  },
];

const KEY_FIELDS: FieldSpec[] = [{ name: 'name', label: 'Key name', kind: 'text', required: true }];

function ApiClients() {
  const canWrite = useCanWrite();
  const list = useLoad(() => rest<{ items: ApiClient[] }>('GET', '/auth/v3/api-clients?limit=200'));
  const [v, setV] = useState(() => initialValues(CLIENT_FIELDS));
  const [secret, setSecret] = useState<{ client_id: string; client_secret: string }>();
  const [askDelete, deleteDialog] = useConfirm<ApiClient>({
    title: 'Delete API client',
    confirmLabel: 'Delete API client',
    danger: true,
    body: (c) => <p>Delete {c.name}? Programs using it can no longer sign in.</p>,
    onConfirm: (c) =>
      void act(() => rest('DELETE', `/auth/v3/api-clients/${c.client_id}`), undefined, list.reload),
  });
  const create = async (values: FormValues) => {
    setSecret(await rest('POST', '/auth/v3/api-clients', values));
    setV(initialValues(CLIENT_FIELDS));
    list.reload();
  };
  const rotate = (c: ApiClient) =>
    act(async () => setSecret(await rest('POST', `/auth/v3/api-clients/${c.client_id}/secret`)));
  return (
    <ListSection
      title="API clients"
      error={list.error}
      caption="API clients"
      rows={list.data?.items ?? []}
      rowKey={(c) => c.client_id}
      loading={list.loading && !list.data}
      empty="No API client yet."
      columns={[
        { label: 'Name', render: (c) => c.name },
        { label: 'Client ID', render: (c) => <span class="mono">{c.client_id}</span> },
        { label: 'Role', render: (c) => c.role },
        { label: 'Created', render: (c) => fmtTime(c.createdAt) },
      ]}
      actions={
        canWrite
          ? (c) => (
              <>
                <Button class="btn-small" onClick={() => void rotate(c)}>
                  New secret for {c.name}
                </Button>
                <Button class="btn-small" kind="danger" onClick={() => askDelete(c)}>
                  Delete {c.name}
                </Button>
              </>
            )
          : undefined
      }
    >
      {secret && (
        <OnceSecret
          what="secret"
          lines={[
            { label: 'Client ID', value: secret.client_id },
            { label: 'Client secret', value: secret.client_secret },
          ]}
          onDismiss={() => setSecret(undefined)}
        />
      )}
      {canWrite && (
        <SchemaForm
          inline
          label="New API client"
          fields={CLIENT_FIELDS}
          values={v}
          onChange={setV}
          onSubmit={create}
          submitLabel="Create API client"
        />
      )}
      {deleteDialog}
    </ListSection>
  );
}

function AccessKeys() {
  const canWrite = useCanWrite();
  const list = useLoad(() => rest<{ items: AccessKey[] }>('GET', '/datahub/v1/access-keys?limit=200'));
  const [v, setV] = useState(() => initialValues(KEY_FIELDS));
  const [key, setKey] = useState<string>();
  const create = async (values: FormValues) => {
    setKey((await rest<{ key: string }>('POST', '/datahub/v1/access-keys', values)).key);
    setV(initialValues(KEY_FIELDS));
    list.reload();
  };
  return (
    <ListSection
      title="DataHub access keys"
      error={list.error}
      caption="DataHub access keys"
      rows={list.data?.items ?? []}
      rowKey={(k) => k.id}
      loading={list.loading && !list.data}
      empty="No access key yet."
      columns={[
        { label: 'Name', render: (k) => k.name },
        { label: 'Key prefix', render: (k) => <span class="mono">{k.prefix}</span> },
        { label: 'Publish', render: (k) => k.publish?.join(', ') ?? 'any' },
        { label: 'Subscribe', render: (k) => k.subscribe?.join(', ') ?? 'any' },
      ]}
      actions={
        canWrite
          ? (k) => (
              <Button
                class="btn-small"
                kind="danger"
                onClick={() =>
                  void act(() => rest('DELETE', `/datahub/v1/access-keys/${k.id}`), undefined, list.reload)
                }
              >
                Revoke {k.name}
              </Button>
            )
          : undefined
      }
    >
      {key && <OnceSecret what="key" lines={[{ value: key }]} onDismiss={() => setKey(undefined)} />}
      {canWrite && (
        <SchemaForm
          inline
          label="New access key"
          fields={KEY_FIELDS}
          values={v}
          onChange={setV}
          onSubmit={create}
          submitLabel="Create access key"
        />
      )}
    </ListSection>
  );
}
