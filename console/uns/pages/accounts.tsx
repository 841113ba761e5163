/**
 * MQTT accounts and their rules, through the management GraphQL API (`accounts`, `createAccount`,
 * `enableAccount`, `disableAccount`, `deleteAccount`), with the rule tester (`testRule`: the
 * broker's own checks). `#/accounts/<id>` is one account: its rules, password and clients.
 */
import { useState } from 'preact/hooks';
import { initialValues, SchemaForm, SearchField, useConfirm, type FieldSpec } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { href } from '../../shared/router.js';
import { ListSection, Pager } from '../../shared/table.js';
import { act, Badge, Button, Section, useCanWrite, useLoad } from '../../shared/ui.js';
import { ACCOUNT_FIELDS, gql, PERM_OPTIONS, type Account } from '../api.js';
import { UnsPage } from '../page.js';
import { AccountDetail } from './account-detail.js';
import '../uns.css';

const LIMIT = 50;

export default function AccountsPage(props: { parts: string[] }) {
  if (props.parts[0]) return <AccountDetail id={props.parts[0]} />;
  return <AccountList />;
}

function AccountList() {
  const canWrite = useCanWrite();
  const [filter, setFilter] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(
    () =>
      gql<{ accounts: { total: number; items: Account[] } }>(
        `query($o: Int, $l: Int, $f: String) { accounts(offset: $o, limit: $l, filter: $f) { total items { ${ACCOUNT_FIELDS} } } }`,
        { o: offset, l: LIMIT, f: filter || null },
      ).then((d) => d.accounts),
    [offset, filter],
  );
  const [askDelete, deleteDialog] = useConfirm<Account>({
    title: 'Delete account',
    confirmLabel: 'Delete account',
    danger: true,
    body: (a) => (
      <p>
        Delete the account <strong>{a.username}</strong>? Its connections are closed at once.
      </p>
    ),
    onConfirm: (a) =>
      void act(
        () => gql('mutation($id: ID!) { deleteAccount(accountId: $id) }', { id: a.id }),
        `Deleted ${a.username}`,
        list.reload,
      ),
  });
  const toggle = (a: Account) =>
    act(
      () =>
        gql(
          `mutation($id: ID!) { ${a.enabled ? 'disableAccount' : 'enableAccount'}(accountId: $id) { id } }`,
          {
            id: a.id,
          },
        ),
      `${a.enabled ? 'Disabled' : 'Enabled'} ${a.username}`,
      list.reload,
    );
  return (
    <UnsPage title="Accounts and rules">
      <ListSection
        title="MQTT accounts"
        error={list.error}
        caption="MQTT accounts"
        loading={list.loading && !list.data}
        headActions={
          <SearchField
            id="account-search"
            label="Search accounts"
            value={filter}
            onSearch={(v) => {
              setFilter(v);
              setOffset(0);
            }}
          />
        }
        columns={[
          {
            label: 'User name',
            render: (a: Account) => <a href={href(`/accounts/${a.id}`)}>{a.username}</a>,
          },
          { label: 'Type', render: (a: Account) => a.acType },
          {
            label: 'State',
            render: (a: Account) => (
              <Badge tone={a.enabled ? 'ok' : 'bad'}>{a.enabled ? 'enabled' : 'disabled'}</Badge>
            ),
          },
          {
            label: 'Rules',
            render: (a: Account) =>
              a.rules.length === 0 ? (
                <span class="muted">none</span>
              ) : (
                a.rules.map((r) => `${r.perm} ${r.path}`).join(', ')
              ),
          },
          {
            label: 'Connected',
            numeric: true,
            render: (a: Account) => String(a.clients.filter((c) => c.connected).length),
          },
          { label: 'Created', render: (a: Account) => fmtTime(a.createdAt) },
        ]}
        rows={list.data?.items ?? []}
        rowKey={(a) => a.id}
        empty="No account yet."
        actions={
          canWrite
            ? (a: Account) => (
                <>
                  <Button class="btn-small" onClick={() => void toggle(a)}>
                    {a.enabled ? 'Disable' : 'Enable'} <span class="sr-only">{a.username}</span>
                  </Button>
                  <Button class="btn-small" kind="danger" onClick={() => askDelete(a)}>
                    Delete <span class="sr-only">{a.username}</span>
                  </Button>
                </>
              )
            : undefined
        }
      >
        <Pager
          label="Account pages"
          offset={offset}
          limit={LIMIT}
          total={list.data?.total ?? 0}
          onOffset={setOffset}
        />
      </ListSection>
      {deleteDialog}
      {canWrite && <NewAccount onCreated={list.reload} />}
      <RuleTester accounts={list.data?.items ?? []} />
    </UnsPage>
  );
}

const NEW_FIELDS: FieldSpec[] = [
  { name: 'username', label: 'Account user name', kind: 'text', required: true },
  { name: 'password', label: 'Account password', kind: 'password', required: true },
  {
    name: 'path',
    label: 'First rule: topic filter',
    kind: 'text',
    description: 'Optional; + one level, # the rest (plant/line1/#).',
  },
  { name: 'perm', label: 'First rule: permission', kind: 'select', default: 'PubSub', options: PERM_OPTIONS },
];

function NewAccount(props: { onCreated: () => void }) {
  const [values, setValues] = useState(initialValues(NEW_FIELDS));
  return (
    <Section title="New account">
      <SchemaForm
        label="New account"
        fields={NEW_FIELDS}
        values={values}
        onChange={setValues}
        submitLabel="Create account"
        onSubmit={async (v) => {
          const rules = v.path ? [{ path: v.path, perm: v.perm }] : [];
          await gql(
            'mutation($u: String!, $p: String!, $r: [RuleInput!]) { createAccount(username: $u, password: $p, rules: $r) { id } }',
            { u: v.username, p: v.password, r: rules },
          );
          setValues(initialValues(NEW_FIELDS));
          props.onCreated();
        }}
      />
    </Section>
  );
}

interface Verdict {
  allowed: boolean;
  reason: string;
  account: { username: string };
}

function RuleTester(props: { accounts: Account[] }) {
  const fields: FieldSpec[] = [
    {
      name: 'username',
      label: 'Account to test',
      kind: 'text',
      required: true,
      description: props.accounts.length ? `For example ${props.accounts[0]!.username}.` : undefined,
    },
    {
      name: 'action',
      label: 'Action',
      kind: 'select',
      default: 'publish',
      options: [
        { value: 'publish', label: 'Publish to the topic' },
        { value: 'subscribe', label: 'Subscribe to the filter' },
      ],
    },
    { name: 'topic', label: 'Topic or filter', kind: 'text', required: true },
  ];
  const [values, setValues] = useState(initialValues(fields));
  const [verdict, setVerdict] = useState<Verdict & { question: string }>();
  return (
    <Section title="Rule tester">
      <p class="muted">Asks the broker itself: the same checks a connection of the account gets.</p>
      <SchemaForm
        label="Rule tester"
        fields={fields}
        values={values}
        onChange={setValues}
        submitLabel="Test the rule"
        onSubmit={async (v) => {
          setVerdict(undefined);
          const r = await gql<{ testRule: Verdict }>(
            'query($r: TestRuleRequest!) { testRule(request: $r) { allowed reason account { username } } }',
            { r: { username: v.username, action: v.action, topic: v.topic } },
          );
          setVerdict({ ...r.testRule, question: `${v.username} ${v.action} ${v.topic}` });
        }}
      />
      <div role="status" class="verdict">
        {verdict && (
          <p>
            <Badge tone={verdict.allowed ? 'ok' : 'bad'}>{verdict.allowed ? 'Allowed' : 'Refused'}</Badge>{' '}
            <span class="mono">{verdict.question}</span>: {verdict.reason}
          </p>
        )}
      </div>
    </Section>
  );
}
