/**
 * Users and roles (admin port): the console's users (password hashed by the manager), a new user,
 * the role bindings (admin, operator or viewer; everywhere, on a company or on a project), a new
 * grant and its revocation; a user's deletion ends their sessions and tokens.
 */
import { useState } from 'preact/hooks';
import { SchemaForm, useConfirm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { ListSection } from '../../shared/table.js';
import { act, Badge, Button, Page, toast, useLoad } from '../../shared/ui.js';
import { get, mrest, type Page as List } from '../api.js';
import { useTitle } from '../session.js';

interface User {
  username: string;
  createdAt: string;
}

interface Binding {
  id: string;
  username: string;
  role: string;
  companyId: string | null;
  projectId: string | null;
  createdAt: string;
}

const ROLES = ['admin', 'operator', 'viewer'].map((r) => ({ value: r, label: r }));

function scopeOf(b: Binding): string {
  if (b.projectId) return `project ${b.projectId}`;
  if (b.companyId) return `company ${b.companyId}`;
  return 'everywhere';
}

export default function Users() {
  useTitle('Users and roles');
  const users = useLoad(() => get<List<User>>('/admin/v1/users?limit=1000'));
  const roles = useLoad(() => get<List<Binding>>('/admin/v1/user/project/roles/paged?limit=1000'));
  const [askDelete, deleteDialog] = useConfirm<User>({
    title: 'Delete the user',
    confirmLabel: 'Delete user',
    danger: true,
    body: (u) => <p>Delete {u.username}? Their roles, API tokens and console sessions end with them.</p>,
    onConfirm: (u) =>
      void act(
        () => mrest('DELETE', `/admin/v1/users/${encodeURIComponent(u.username)}`),
        `User ${u.username} deleted`,
        () => {
          users.reload();
          roles.reload();
        },
      ),
  });
  const userFields: FieldSpec[] = [
    { name: 'username', label: 'User name', kind: 'text', required: true },
    {
      name: 'password',
      label: 'Password',
      kind: 'password',
      required: true,
      description: '8 characters or more',
    },
  ];
  const [user, setUser] = useState<FormValues>({ username: '', password: '' });
  const grantFields: FieldSpec[] = [
    {
      name: 'username',
      label: 'User of the role',
      kind: 'select',
      required: true,
      options: (users.data?.items ?? []).map((u) => ({ value: u.username, label: u.username })),
    },
    { name: 'role', label: 'Role to grant', kind: 'select', options: ROLES },
    { name: 'companyId', label: 'Company ID', kind: 'text', description: 'empty: every company' },
    { name: 'projectId', label: 'Project ID', kind: 'text', description: 'or one project' },
  ];
  const [grant, setGrant] = useState<FormValues>({
    username: '',
    role: 'viewer',
    companyId: '',
    projectId: '',
  });
  const grantUser = grant.username || users.data?.items[0]?.username || '';
  return (
    <Page title="Users and roles">
      <ListSection
        title="Users"
        caption="Users"
        error={users.error}
        loading={users.loading && !users.data}
        rows={users.data?.items ?? []}
        rowKey={(u) => u.username}
        columns={[
          { label: 'User name', render: (u) => u.username },
          { label: 'Created', render: (u) => fmtTime(u.createdAt) },
        ]}
        actions={(u) => (
          <Button kind="danger" onClick={() => askDelete(u)} aria-label={`Delete ${u.username}`}>
            Delete
          </Button>
        )}
      >
        <SchemaForm
          label="New user"
          inline
          fields={userFields}
          values={user}
          onChange={setUser}
          submitLabel="Create user"
          onSubmit={async (v) => {
            await mrest('POST', '/admin/v1/users', { username: v.username, password: v.password });
            toast(`User ${v.username} created`);
            setUser({ username: '', password: '' });
            users.reload();
          }}
        />
      </ListSection>
      <ListSection
        title="Roles"
        caption="Role bindings"
        error={roles.error}
        loading={roles.loading && !roles.data}
        rows={roles.data?.items ?? []}
        rowKey={(b) => b.id}
        columns={[
          { label: 'User', render: (b) => b.username },
          { label: 'Role', render: (b) => <Badge>{b.role}</Badge> },
          { label: 'Scope', render: scopeOf },
          { label: 'Granted', render: (b) => fmtTime(b.createdAt) },
        ]}
        actions={(b) => (
          <Button
            kind="danger"
            aria-label={`Revoke ${b.role} of ${b.username} (${scopeOf(b)})`}
            onClick={() =>
              void act(
                () => mrest('DELETE', `/admin/v1/user/project/roles/${b.id}`),
                'Role revoked',
                roles.reload,
              )
            }
          >
            Revoke
          </Button>
        )}
      >
        <SchemaForm
          label="Grant a role"
          fields={grantFields}
          values={{ ...grant, username: grantUser }}
          onChange={setGrant}
          submitLabel="Grant role"
          onSubmit={async (v) => {
            await mrest('POST', '/admin/v1/user/project/roles', {
              username: v.username || grantUser,
              role: v.role || 'viewer',
              ...(v.companyId ? { companyId: v.companyId } : {}),
              ...(v.projectId ? { projectId: v.projectId } : {}),
            });
            toast('Role granted');
            setGrant({ username: grantUser, role: 'viewer', companyId: '', projectId: '' });
            roles.reload();
          }}
        />
      </ListSection>
      {deleteDialog}
    </Page>
  );
}
