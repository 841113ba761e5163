/**
 * Integrations: the providers, instances with their state, counters and queue depth (refreshed
 * every two seconds), instance forms generated from `GetProviderSchema`, start and stop, and each
 * instance's subscriptions.
 */
import { useEffect, useState } from 'preact/hooks';
import { gql, PATHS } from '../../shared/api.js';
import { initialValues, SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtNum } from '../../shared/format.js';
import { href, navigate } from '../../shared/router.js';
import { Table } from '../../shared/table.js';
import {
  Badge,
  ErrorNote,
  LinkButton,
  Page,
  Section,
  toast,
  toneOf,
  useCanWrite,
  useInterval,
  useLoad,
} from '../../shared/ui.js';
import { InstancePage } from './integration-instance.js';

const P = PATHS.integrations;

interface Provider {
  ProviderID: string;
  Name: string;
  Group: string;
  Description: string;
  Transport: string;
}

interface SchemaProperty {
  Name: string;
  Label: string;
  Description: string;
  Type: string;
  Required: boolean;
  RequiredWhen: string | null;
  AppliesWhen: string | null;
  Default: unknown;
  Enum: unknown[] | null;
  Min: number | null;
  Max: number | null;
  Secret: boolean;
}

export interface Instance {
  InstanceID: string;
  Name: string;
  ProviderID: string;
  ProviderName: string;
  Config: Record<string, unknown>;
  Enabled: boolean;
  Description: string;
}

export interface Status {
  InstanceState: string;
  Reason: string;
  LastError: string;
  Counters: {
    Sent: number;
    Received: number;
    Queued: number;
    Enqueued: number;
    Dropped: number;
    Malformed: number;
  };
  Queue: { Depth: number; Bytes: number; Dropped: number };
}

export const STATUS =
  'InstanceState Reason LastError Counters { Sent Received Queued Enqueued Dropped Malformed } Queue { Depth Bytes Dropped }';

export default function Integrations(props: { parts: string[]; query: URLSearchParams }) {
  const [id] = props.parts;
  if (id === 'new') return <InstanceForm providerId={props.query.get('provider') ?? ''} />;
  if (id) return <InstancePage id={id} />;
  return <Overview />;
}

async function statuses(items: Instance[]): Promise<Record<string, Status>> {
  const out: Record<string, Status> = {};
  await Promise.all(
    items.map(async (i) => {
      const r = await gql<{ GetInstanceStatus: Status }>(
        P,
        `query S($input: GetInstanceStatusRequest!) { GetInstanceStatus(input: $input) { ${STATUS} } }`,
        {
          input: { InstanceID: i.InstanceID },
        },
      ).catch(() => undefined);
      if (r) out[i.InstanceID] = r.GetInstanceStatus;
    }),
  );
  return out;
}

function Overview() {
  const canWrite = useCanWrite();
  const providers = useLoad(() =>
    gql<{ ListProviders: { Items: Provider[] } }>(
      P,
      '{ ListProviders(input: { Limit: 200 }) { Items { ProviderID Name Group Description Transport } } }',
    ),
  );
  const instances = useLoad(() =>
    gql<{ ListInstances: { Items: Instance[] } }>(
      P,
      '{ ListInstances(input: { Limit: 200 }) { Items { InstanceID Name ProviderID ProviderName Config Enabled Description } } }',
    ),
  );
  const [status, setStatus] = useState<Record<string, Status>>({});
  const items = instances.data?.ListInstances.Items ?? [];
  const refresh = () => void statuses(items).then(setStatus);
  useEffect(refresh, [instances.data]);
  useInterval(refresh, 2000);
  return (
    <Page title="Integrations">
      <Section title="Instances">
        <ErrorNote error={instances.error} />
        <Table
          caption="Integration instances"
          rows={items}
          rowKey={(i) => i.InstanceID}
          loading={instances.loading && !instances.data}
          empty="No instance yet: add one from a provider below."
          columns={[
            {
              label: 'Instance',
              render: (i) => <a href={href(`/integrations/${i.InstanceID}`)}>{i.Name}</a>,
            },
            { label: 'Provider', render: (i) => i.ProviderName },
            {
              label: 'State',
              render: (i) =>
                status[i.InstanceID] && (
                  <Badge tone={toneOf(status[i.InstanceID]!.InstanceState)}>
                    {status[i.InstanceID]!.InstanceState}
                  </Badge>
                ),
            },
            { label: 'Sent', render: (i) => fmtNum(status[i.InstanceID]?.Counters.Sent), numeric: true },
            {
              label: 'Received',
              render: (i) => fmtNum(status[i.InstanceID]?.Counters.Received),
              numeric: true,
            },
            { label: 'Queue depth', render: (i) => fmtNum(status[i.InstanceID]?.Queue.Depth), numeric: true },
          ]}
        />
      </Section>
      <Section title="Providers">
        <ErrorNote error={providers.error} />
        <Table
          caption="Providers"
          rows={providers.data?.ListProviders.Items ?? []}
          rowKey={(p) => p.ProviderID}
          columns={[
            { label: 'Provider', render: (p) => p.Name },
            { label: 'Group', render: (p) => p.Group },
            { label: 'Description', render: (p) => p.Description },
          ]}
          actions={
            canWrite
              ? (p) => (
                  <LinkButton to={`/integrations/new?provider=${p.ProviderID}`}>
                    Add {p.Name} instance
                  </LinkButton>
                )
              : undefined
          }
        />
      </Section>
    </Page>
  );
}

function fieldsOfSchema(props: SchemaProperty[]): FieldSpec[] {
  return props.map((p) => {
    const kind: FieldSpec['kind'] =
      p.Enum && p.Enum.length > 0
        ? 'select'
        : p.Secret || p.Type === 'Password'
          ? 'password'
          : p.Type === 'Integer' || p.Type === 'Number'
            ? 'number'
            : p.Type === 'Boolean'
              ? 'boolean'
              : p.Type === 'Json' || p.Type === 'Pem'
                ? 'textarea'
                : 'text';
    const hint = [
      p.Description,
      p.RequiredWhen ? `Required ${p.RequiredWhen}.` : '',
      p.AppliesWhen ? `Applies ${p.AppliesWhen}.` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return {
      name: p.Name,
      label: p.Label || p.Name,
      kind,
      required: p.Required,
      ...(hint ? { description: hint } : {}),
      ...(p.Default !== null && p.Default !== undefined
        ? { default: typeof p.Default === 'string' ? p.Default : JSON.stringify(p.Default) }
        : {}),
      ...(p.Enum ? { options: p.Enum.map((e) => ({ value: String(e), label: String(e) })) } : {}),
      ...(p.Min !== null ? { min: p.Min } : {}),
      ...(p.Max !== null ? { max: p.Max } : {}),
    };
  });
}

/** Form values → a Config object, typed by the schema. */
function configOf(schema: SchemaProperty[], v: FormValues, keepEmpty = false): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of schema) {
    const raw = v[p.Name];
    if (raw === undefined || (raw === '' && !keepEmpty)) continue;
    if (p.Type === 'Integer' || p.Type === 'Number') out[p.Name] = Number(raw);
    else if (p.Type === 'Boolean') out[p.Name] = raw === 'true';
    else if (p.Type === 'Json') {
      try {
        out[p.Name] = JSON.parse(raw);
      } catch {
        out[p.Name] = raw;
      }
    } else out[p.Name] = raw;
  }
  return out;
}

function useSchema(providerId: string) {
  return useLoad(
    async () =>
      providerId
        ? (
            await gql<{ GetProviderSchema: { Name: string; Properties: SchemaProperty[]; Rules: string[] } }>(
              P,
              'query G($input: GetProviderSchemaRequest!) { GetProviderSchema(input: $input) { Name Rules Properties { Name Label Description Type Required RequiredWhen AppliesWhen Default Enum Min Max Secret } } }',
              { input: { ProviderID: providerId } },
            )
          ).GetProviderSchema
        : undefined,
    [providerId],
  );
}

const BASE: FieldSpec[] = [
  { name: '__name', label: 'Instance name', kind: 'text', required: true },
  { name: '__description', label: 'Instance description', kind: 'text' },
  { name: '__enabled', label: 'Start the instance', kind: 'boolean', default: 'true' },
];

export function InstanceForm(props: { providerId: string; instance?: Instance; onSaved?: () => void }) {
  const schema = useSchema(props.providerId);
  const fields = [...BASE, ...fieldsOfSchema(schema.data?.Properties ?? [])];
  const [values, setValues] = useState<FormValues>({});
  useEffect(() => {
    const i = props.instance;
    const given: FormValues = i
      ? { __name: i.Name, __description: i.Description, __enabled: String(i.Enabled) }
      : {};
    if (i)
      for (const [k, v] of Object.entries(i.Config)) given[k] = typeof v === 'string' ? v : JSON.stringify(v);
    setValues(initialValues(fields, given));
  }, [schema.data, props.instance]);
  const submit = async (v: FormValues) => {
    const Config = configOf(schema.data?.Properties ?? [], v);
    const common = {
      Name: v.__name,
      Description: v.__description ?? '',
      Enabled: v.__enabled === 'true',
      Config,
    };
    if (props.instance) {
      await gql(
        P,
        'mutation U($input: UpdateInstanceRequest!) { UpdateInstance(input: $input) { InstanceID } }',
        {
          input: { InstanceID: props.instance.InstanceID, ...common },
        },
      );
      toast(`Instance ${v.__name} saved`);
      props.onSaved?.();
    } else {
      const r = await gql<{ CreateInstance: { InstanceID: string } }>(
        P,
        'mutation C($input: CreateInstanceRequest!) { CreateInstance(input: $input) { InstanceID } }',
        {
          input: { ProviderID: props.providerId, ...common },
        },
      );
      toast(`Instance ${v.__name} created`);
      navigate(`/integrations/${r.CreateInstance.InstanceID}`);
    }
  };
  const form = (
    <>
      <ErrorNote error={schema.error} />
      {schema.data && (
        <SchemaForm
          label={props.instance ? 'Instance settings' : `New ${schema.data.Name} instance`}
          fields={fields}
          values={values}
          onChange={setValues}
          onSubmit={submit}
          submitLabel={props.instance ? 'Save instance' : 'Create instance'}
        />
      )}
    </>
  );
  if (props.instance) return form;
  return (
    <Page
      title={`Add ${schema.data?.Name ?? ''} instance`}
      actions={<LinkButton to="/integrations">All integrations</LinkButton>}
    >
      <Section title="Instance settings">{form}</Section>
    </Page>
  );
}
