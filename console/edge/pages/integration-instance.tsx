/** One integration instance: live state, counters and queue, start and stop, settings, subscriptions. */
import { useState } from 'preact/hooks';
import { gql, PATHS } from '../../shared/api.js';
import { Confirm, initialValues, SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtBytes, fmtNum } from '../../shared/format.js';
import { navigate } from '../../shared/router.js';
import { ListSection } from '../../shared/table.js';
import {
  act,
  Badge,
  Button,
  ErrorNote,
  LinkButton,
  Page,
  Section,
  Stat,
  toast,
  toneOf,
  useCanWrite,
  useInterval,
  useLoad,
} from '../../shared/ui.js';
import { InstanceForm, STATUS, type Instance, type Status } from './integrations.js';

const P = PATHS.integrations;

interface Sub {
  TopicID: string;
  IsLocalToRemote: boolean;
  Enabled: boolean;
  LocalName: string;
  RemoteName: string;
  Description: string;
}

export function InstancePage(props: { id: string }) {
  const canWrite = useCanWrite();
  const [doomed, setDoomed] = useState(false);
  const instance = useLoad(
    () =>
      gql<{ GetInstance: Instance }>(
        P,
        'query G($input: GetInstanceRequest!) { GetInstance(input: $input) { InstanceID Name ProviderID ProviderName Config Enabled Description } }',
        {
          input: { InstanceID: props.id },
        },
      ),
    [props.id],
  );
  const status = useLoad(
    () =>
      gql<{ GetInstanceStatus: Status }>(
        P,
        `query S($input: GetInstanceStatusRequest!) { GetInstanceStatus(input: $input) { ${STATUS} } }`,
        {
          input: { InstanceID: props.id },
        },
      ),
    [props.id],
  );
  useInterval(status.reload, 2000);
  const i = instance.data?.GetInstance;
  const s = status.data?.GetInstanceStatus;
  const setEnabled = (Enabled: boolean) =>
    act(
      () =>
        gql(
          P,
          'mutation U($input: UpdateInstanceRequest!) { UpdateInstance(input: $input) { InstanceID } }',
          {
            input: { InstanceID: props.id, Enabled },
          },
        ),
      Enabled ? 'Instance started' : 'Instance stopped',
      () => {
        instance.reload();
        status.reload();
      },
    );
  const remove = () =>
    act(
      () =>
        gql(P, 'mutation D($input: DeleteInstanceRequest!) { DeleteInstance(input: $input) }', {
          input: { InstanceID: props.id },
        }),
      'Instance deleted',
      () => navigate('/integrations'),
    );
  return (
    <Page
      title={i ? `Integration ${i.Name}` : 'Integration'}
      actions={
        <>
          <LinkButton to="/integrations">All integrations</LinkButton>
          {canWrite &&
            i &&
            (i.Enabled ? (
              <Button onClick={() => void setEnabled(false)}>Stop instance</Button>
            ) : (
              <Button kind="primary" onClick={() => void setEnabled(true)}>
                Start instance
              </Button>
            ))}
          {canWrite && i && (
            <Button kind="danger" onClick={() => setDoomed(true)}>
              Delete instance
            </Button>
          )}
        </>
      }
    >
      <ErrorNote error={instance.error} />
      {s && (
        <>
          <div class="stats" aria-label="Instance counters">
            <Stat label="State" value={<Badge tone={toneOf(s.InstanceState)}>{s.InstanceState}</Badge>} />
            <Stat label="Sent" value={fmtNum(s.Counters.Sent)} />
            <Stat label="Received" value={fmtNum(s.Counters.Received)} />
            <Stat label="Queue depth" value={fmtNum(s.Queue.Depth)} />
            <Stat label="Queued bytes" value={fmtBytes(s.Queue.Bytes)} />
            <Stat label="Dropped" value={fmtNum(s.Counters.Dropped)} />
          </div>
          {(s.Reason || s.LastError) && (
            <p class="muted">
              {[s.Reason, s.LastError && `Last error: ${s.LastError}`].filter(Boolean).join(' · ')}
            </p>
          )}
        </>
      )}
      {i && <Subscriptions instanceId={props.id} />}
      {canWrite && i && (
        <Section title="Instance settings">
          <InstanceForm providerId={i.ProviderID} instance={i} onSaved={instance.reload} />
        </Section>
      )}
      <Confirm
        title="Delete instance"
        open={doomed}
        danger
        confirmLabel="Delete instance"
        onConfirm={() => void remove()}
        onClose={() => setDoomed(false)}
      >
        <p>Delete this instance and its subscriptions?</p>
      </Confirm>
    </Page>
  );
}

const SUB_FIELDS: FieldSpec[] = [
  {
    name: 'Direction',
    label: 'Direction',
    kind: 'select',
    required: true,
    default: 'out',
    options: [
      { value: 'out', label: 'DataHub → remote' },
      { value: 'in', label: 'Remote → DataHub' },
    ],
  },
  {
    name: 'LocalName',
    label: 'DataHub subject',
    kind: 'text',
    required: true,
    description: 'Outgoing: a pattern (* and > allowed), e.g. devicehub.alias.>',
  },
  {
    name: 'RemoteName',
    label: 'Remote name',
    kind: 'text',
    required: true,
    description: 'Topic, subject, routing key, table or stream; {device} {tag} are filled.',
  },
  { name: 'Description', label: 'Subscription description', kind: 'text' },
];

function Subscriptions(props: { instanceId: string }) {
  const canWrite = useCanWrite();
  const list = useLoad(
    () =>
      gql<{ ListSubscriptions: { Items: Sub[] } }>(
        P,
        'query L($input: ListSubscriptionsRequest!) { ListSubscriptions(input: $input) { Items { TopicID IsLocalToRemote Enabled LocalName RemoteName Description } } }',
        { input: { InstanceID: props.instanceId, Limit: 200 } },
      ),
    [props.instanceId],
  );
  const [values, setValues] = useState<FormValues>(() => initialValues(SUB_FIELDS));
  const add = async (v: FormValues) => {
    await gql(
      P,
      'mutation C($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { TopicID } }',
      {
        input: {
          InstanceID: props.instanceId,
          IsLocalToRemote: v.Direction !== 'in',
          LocalName: v.LocalName,
          RemoteName: v.RemoteName,
          Description: v.Description ?? '',
          Enabled: true,
        },
      },
    );
    toast('Subscription added');
    setValues(initialValues(SUB_FIELDS));
    list.reload();
  };
  const remove = (s: Sub) =>
    act(
      () =>
        gql(P, 'mutation D($input: DeleteSubscriptionRequest!) { DeleteSubscription(input: $input) }', {
          input: { TopicID: s.TopicID },
        }),
      undefined,
      list.reload,
    );
  return (
    <ListSection
      title="Subscriptions"
      error={list.error}
      caption="Subscriptions"
      rows={list.data?.ListSubscriptions.Items ?? []}
      rowKey={(s) => s.TopicID}
      loading={list.loading && !list.data}
      empty="No subscription: nothing flows yet."
      columns={[
        {
          label: 'Direction',
          render: (s) => (s.IsLocalToRemote ? 'DataHub → remote' : 'Remote → DataHub'),
        },
        { label: 'DataHub subject', render: (s) => <span class="mono">{s.LocalName}</span> },
        { label: 'Remote name', render: (s) => <span class="mono">{s.RemoteName}</span> },
        { label: 'Enabled', render: (s) => (s.Enabled ? 'yes' : 'no') },
      ]}
      actions={
        canWrite
          ? (s) => (
              <Button kind="danger" class="btn-small" onClick={() => void remove(s)}>
                Delete subscription {s.LocalName}
              </Button>
            )
          : undefined
      }
    >
      {canWrite && (
        <SchemaForm
          label="New subscription"
          fields={SUB_FIELDS}
          values={values}
          onChange={setValues}
          onSubmit={add}
          submitLabel="Add subscription"
        />
      )}
    </ListSection>
  );
}
