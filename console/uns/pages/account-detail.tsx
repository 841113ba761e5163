/** One MQTT account: its rules (add, remove), its password, and its clients (connected and recent). */
import { useState } from 'preact/hooks';
import { initialValues, SchemaForm, type FieldSpec } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { ListSection } from '../../shared/table.js';
import { act, Badge, Button, ErrorNote, Section, toast, useCanWrite, useLoad } from '../../shared/ui.js';
import { ACCOUNT_FIELDS, gql, PERM_OPTIONS, type Account, type MqttClientInfo, type Rule } from '../api.js';
import { UnsPage } from '../page.js';

const RULE_FIELDS: FieldSpec[] = [
  {
    name: 'path',
    label: 'Topic filter',
    kind: 'text',
    required: true,
    description: '+ one level, # the rest.',
  },
  { name: 'perm', label: 'Permission', kind: 'select', default: 'PubSub', options: PERM_OPTIONS },
];
const PASSWORD_FIELDS: FieldSpec[] = [
  { name: 'password', label: 'New password', kind: 'password', required: true },
];

export function AccountDetail(props: { id: string }) {
  const canWrite = useCanWrite();
  const one = useLoad(
    () =>
      gql<{ account: Account[] }>(`query($id: ID) { account(id: $id) { ${ACCOUNT_FIELDS} } }`, {
        id: props.id,
      }).then((d) => d.account[0] ?? null),
    [props.id],
  );
  const a = one.data;
  const [rule, setRule] = useState(initialValues(RULE_FIELDS));
  const [password, setPassword] = useState(initialValues(PASSWORD_FIELDS));
  if (one.data === null) {
    return (
      <UnsPage title="Account not found">
        <p>No account {props.id}.</p>
      </UnsPage>
    );
  }
  const remove = (r: Rule) =>
    act(
      () =>
        gql('mutation($id: ID!, $r: [ID!]!) { removeAccountRules(accountId: $id, ruleIds: $r) { id } }', {
          id: props.id,
          r: [r.id],
        }),
      `Removed ${r.perm} ${r.path}`,
      one.reload,
    );
  return (
    <UnsPage title={a ? `Account ${a.username}` : 'Account'}>
      <ErrorNote error={one.error} />
      <ListSection
        title="Rules"
        error={undefined}
        caption={`Rules of ${a?.username ?? 'the account'}`}
        loading={one.loading && !a}
        columns={[
          { label: 'Topic filter', render: (r: Rule) => <span class="mono">{r.path}</span> },
          { label: 'Permission', render: (r: Rule) => r.perm },
        ]}
        rows={a?.rules ?? []}
        rowKey={(r) => r.id}
        empty="No rule: the account can neither publish nor subscribe."
        actions={
          canWrite
            ? (r: Rule) => (
                <Button class="btn-small" kind="danger" onClick={() => void remove(r)}>
                  Remove <span class="sr-only">{`${r.perm} ${r.path}`}</span>
                </Button>
              )
            : undefined
        }
      >
        {canWrite && (
          <SchemaForm
            label="New rule"
            inline
            fields={RULE_FIELDS}
            values={rule}
            onChange={setRule}
            submitLabel="Add rule"
            onSubmit={async (v) => {
              await gql(
                'mutation($id: ID!, $r: [RuleInput!]!) { addAccountRules(accountId: $id, rules: $r) { id } }',
                {
                  id: props.id,
                  r: [{ path: v.path, perm: v.perm }],
                },
              );
              setRule(initialValues(RULE_FIELDS));
              one.reload();
            }}
          />
        )}
      </ListSection>
      <ListSection
        title="Clients"
        error={undefined}
        caption="Clients of the account"
        loading={one.loading && !a}
        columns={[
          { label: 'Client ID', render: (c: MqttClientInfo) => <span class="mono">{c.id}</span> },
          {
            label: 'State',
            render: (c: MqttClientInfo) => (
              <Badge tone={c.connected ? 'ok' : 'info'}>{c.connected ? 'connected' : 'disconnected'}</Badge>
            ),
          },
          { label: 'Remote', render: (c: MqttClientInfo) => c.remote },
          { label: 'Last seen', render: (c: MqttClientInfo) => fmtTime(c.lastSeen) },
        ]}
        rows={a?.clients ?? []}
        rowKey={(c) => c.id}
        empty="No client since the start."
      />
      {canWrite && a && (
        <Section title="Password">
          <SchemaForm
            label="Set the account password"
            inline
            fields={PASSWORD_FIELDS}
            values={password}
            onChange={setPassword}
            submitLabel="Set password"
            onSubmit={async (v) => {
              await gql(
                'mutation($id: ID!, $p: String!) { setAccountPassword(accountId: $id, password: $p) { id } }',
                {
                  id: props.id,
                  p: v.password,
                },
              );
              setPassword(initialValues(PASSWORD_FIELDS));
              toast(`Password of ${a.username} set`);
            }}
          />
        </Section>
      )}
    </UnsPage>
  );
}
