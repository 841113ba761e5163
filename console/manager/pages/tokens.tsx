/**
 * API tokens (admin port): the manager's long-lived tokens (no secret listed), a new one (its
 * secret shown once), a rotation (a new secret, shown once; the old one stops at once) and a
 * revocation, each asked first.
 */
import { useState } from 'preact/hooks';
import { SchemaForm, useConfirm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { ListSection } from '../../shared/table.js';
import { act, Badge, Button, OnceSecret, Page, useLoad } from '../../shared/ui.js';
import { get, mrest, type Page as List } from '../api.js';
import { useTitle } from '../session.js';

interface Token {
  id: string;
  name: string;
  role: string;
  username: string | null;
  createdAt: string;
  rotatedAt: string;
}

const ROLES = ['admin', 'operator', 'viewer'].map((r) => ({ value: r, label: r }));

export default function Tokens() {
  useTitle('API tokens');
  const tokens = useLoad(() => get<List<Token>>('/admin/v1/api-tokens?limit=1000'));
  const [secret, setSecret] = useState<{ name: string; token: string }>();
  const [askRevoke, revokeDialog] = useConfirm<Token>({
    title: 'Revoke the API token',
    confirmLabel: 'Revoke',
    danger: true,
    body: (t) => <p>Revoke {t.name}? Every program using it is refused from now on.</p>,
    onConfirm: (t) =>
      void act(
        () => mrest('DELETE', `/admin/v1/api-tokens/${t.id}`),
        `Token ${t.name} revoked`,
        tokens.reload,
      ),
  });
  const [askRotate, rotateDialog] = useConfirm<Token>({
    title: 'Rotate the API token',
    confirmLabel: 'Rotate',
    body: (t) => <p>Give {t.name} a new secret? The current one stops working at once.</p>,
    onConfirm: (t) =>
      void act(
        async () => {
          const r = await mrest<Token & { token: string }>('POST', `/admin/v1/api-tokens/${t.id}/rotate`);
          setSecret({ name: r.name, token: r.token });
        },
        `Token ${t.name} rotated`,
        tokens.reload,
      ),
  });
  const fields: FieldSpec[] = [
    { name: 'name', label: 'Token name', kind: 'text', required: true },
    { name: 'role', label: 'Role', kind: 'select', options: ROLES },
  ];
  const [values, setValues] = useState<FormValues>({ name: '', role: 'viewer' });
  return (
    <Page title="API tokens">
      <ListSection
        title="API tokens"
        caption="API tokens"
        error={tokens.error}
        loading={tokens.loading && !tokens.data}
        rows={tokens.data?.items ?? []}
        rowKey={(t) => t.id}
        columns={[
          { label: 'Name', render: (t) => t.name },
          { label: 'Role', render: (t) => <Badge>{t.username ? `user ${t.username}` : t.role}</Badge> },
          { label: 'Created', render: (t) => fmtTime(t.createdAt) },
          { label: 'Rotated', render: (t) => fmtTime(t.rotatedAt) },
        ]}
        actions={(t) => (
          <>
            <Button onClick={() => askRotate(t)} aria-label={`Rotate ${t.name}`}>
              Rotate
            </Button>
            <Button kind="danger" onClick={() => askRevoke(t)} aria-label={`Revoke ${t.name}`}>
              Revoke
            </Button>
          </>
        )}
      >
        <SchemaForm
          label="New API token"
          inline
          fields={fields}
          values={values}
          onChange={setValues}
          submitLabel="Create API token"
          onSubmit={async (v) => {
            const r = await mrest<Token & { token: string }>('POST', '/admin/v1/api-tokens', {
              name: v.name,
              role: v.role || 'viewer',
            });
            setSecret({ name: r.name, token: r.token });
            setValues({ name: '', role: 'viewer' });
            tokens.reload();
          }}
        />
        {secret && (
          <OnceSecret
            what="API token"
            lines={[{ label: secret.name, value: secret.token }]}
            onDismiss={() => setSecret(undefined)}
          />
        )}
      </ListSection>
      {revokeDialog}
      {rotateDialog}
    </Page>
  );
}
