/** Digital twins: models and instances, each instance's state and its last payload (live over `DataAccess`). */
import { useEffect, useState } from 'preact/hooks';
import { TWINS } from '../../../src/client/twins.js';
import { gql, PATHS } from '../../shared/api.js';
import { initialValues, SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { ListSection } from '../../shared/table.js';
import {
  act,
  Badge,
  Button,
  ErrorNote,
  Page,
  Section,
  toast,
  toneOf,
  useCanWrite,
  useInterval,
  useLoad,
} from '../../shared/ui.js';
import { subscribe } from '../../shared/ws.js';

interface Model {
  ID: string;
  Name: string;
  Assets: string;
  Description: string;
  InstanceCount: number;
  DynamicAttributeCount: number;
}

interface Instance {
  ID: string;
  ModelID: string;
  ModelName: string;
  Name: string;
  Topic: string;
  Enabled: boolean;
}

const MODEL_FIELDS: FieldSpec[] = [
  { name: 'Name', label: 'Model name', kind: 'text', required: true },
  {
    name: 'Assets',
    label: 'Assets',
    kind: 'text',
    required: true,
    description: 'The asset kind the model describes, e.g. pump',
  },
  { name: 'Description', label: 'Model description', kind: 'text' },
];

const INSTANCE_FIELDS: FieldSpec[] = [
  { name: 'ModelID', label: 'Model of the instance', kind: 'select', required: true, options: [] },
  { name: 'Name', label: 'Instance name', kind: 'text', required: true },
];

export default function Twins() {
  const canWrite = useCanWrite();
  const models = useLoad(() =>
    gql<{ ListModels: { Items: Model[]; Total: number } }>(PATHS.twins, TWINS.ListModels, {
      input: { Limit: 200 },
    }),
  );
  const instances = useLoad(() =>
    gql<{ ListInstances: { Items: Instance[] } }>(PATHS.twins, TWINS.ListInstances, {
      input: { Limit: 200 },
    }),
  );
  const [state, setState] = useState<
    Record<string, { State: string; Error: string | null; Published: number }>
  >({});
  const [watching, setWatching] = useState<Instance>();
  const [values, setValues] = useState<FormValues>(() => initialValues(MODEL_FIELDS));
  const [newInstance, setNewInstance] = useState<FormValues>(() => initialValues(INSTANCE_FIELDS));
  const list = instances.data?.ListInstances.Items ?? [];
  const refresh = () =>
    void Promise.all(
      list.map((i) =>
        gql<{ GetInstanceStatus: { State: string; Error: string | null; Published: number } | null }>(
          PATHS.twins,
          TWINS.GetInstanceStatus,
          { ID: i.ID },
        )
          .then((r) => [i.ID, r.GetInstanceStatus] as const)
          .catch(() => [i.ID, null] as const),
      ),
    ).then((all) =>
      setState(
        Object.fromEntries(all.filter((x) => x[1] !== null)) as Record<
          string,
          { State: string; Error: string | null; Published: number }
        >,
      ),
    );
  useEffect(refresh, [instances.data]);
  useInterval(refresh, 3000);
  const createModel = async (v: FormValues) => {
    await gql(PATHS.twins, TWINS.CreateModel, {
      input: { Name: v.Name, Assets: v.Assets, Description: v.Description ?? '' },
    });
    toast(`Model ${v.Name} created`);
    setValues(initialValues(MODEL_FIELDS));
    models.reload();
  };
  const createInstance = async (v: FormValues) => {
    await gql(PATHS.twins, TWINS.CreateInstance, { input: { ModelID: v.ModelID, Name: v.Name } });
    toast(`Instance ${v.Name} created`);
    setNewInstance(initialValues(INSTANCE_FIELDS));
    instances.reload();
    models.reload();
  };
  const removeModel = (m: Model) =>
    act(
      () => gql(PATHS.twins, TWINS.DeleteModel, { input: { ID: m.ID } }),
      undefined,
      () => {
        models.reload();
        instances.reload();
      },
    );
  const instanceFields: FieldSpec[] = INSTANCE_FIELDS.map((f) =>
    f.name === 'ModelID'
      ? {
          ...f,
          options: (models.data?.ListModels.Items ?? []).map((m) => ({ value: m.ID, label: m.Name })),
        }
      : f,
  );
  return (
    <Page title="Digital twins">
      <ListSection
        title="Models"
        error={models.error}
        caption="Models"
        rows={models.data?.ListModels.Items ?? []}
        rowKey={(m) => m.ID}
        loading={models.loading && !models.data}
        empty="No model yet."
        columns={[
          { label: 'Model', render: (m) => m.Name },
          { label: 'Assets', render: (m) => m.Assets },
          { label: 'Instances', render: (m) => m.InstanceCount, numeric: true },
          { label: 'Dynamic attributes', render: (m) => m.DynamicAttributeCount, numeric: true },
        ]}
        actions={
          canWrite
            ? (m) => (
                <Button class="btn-small" kind="danger" onClick={() => void removeModel(m)}>
                  Delete model {m.Name}
                </Button>
              )
            : undefined
        }
      >
        {canWrite && (
          <SchemaForm
            label="New model"
            fields={MODEL_FIELDS}
            values={values}
            onChange={setValues}
            onSubmit={createModel}
            submitLabel="Create model"
          />
        )}
      </ListSection>
      <ListSection
        title="Instances"
        error={instances.error}
        caption="Instances"
        rows={list}
        rowKey={(i) => i.ID}
        loading={instances.loading && !instances.data}
        empty="No instance yet."
        columns={[
          { label: 'Instance', render: (i) => i.Name },
          { label: 'Model', render: (i) => i.ModelName },
          { label: 'Topic', render: (i) => <span class="mono">{i.Topic}</span> },
          {
            label: 'State',
            render: (i) =>
              state[i.ID] && <Badge tone={toneOf(state[i.ID]!.State)}>{state[i.ID]!.State}</Badge>,
          },
          { label: 'Published', render: (i) => state[i.ID]?.Published ?? '–', numeric: true },
        ]}
        actions={(i) => (
          <Button class="btn-small" onClick={() => setWatching(i)}>
            Watch {i.Name}
          </Button>
        )}
      >
        {canWrite && (
          <SchemaForm
            inline
            label="New instance"
            fields={instanceFields}
            values={newInstance}
            onChange={setNewInstance}
            onSubmit={createInstance}
            submitLabel="Create instance"
          />
        )}
      </ListSection>
      {watching && <Payload instance={watching} onClose={() => setWatching(undefined)} />}
    </Page>
  );
}

function Payload(props: { instance: Instance; onClose: () => void }) {
  const [payload, setPayload] = useState<unknown>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    gql<{ GetInstancePayload: unknown }>(PATHS.twins, TWINS.GetInstancePayload, {
      ID: props.instance.ID,
    }).then(
      (r) => setPayload(r.GetInstancePayload),
      () => undefined,
    );
    return subscribe<{ DataAccess: { Payload: unknown } }>(
      PATHS.twins,
      TWINS.DataAccess,
      { input: { InstanceID: props.instance.ID } },
      (d) => setPayload(d.DataAccess.Payload),
      setError,
    );
  }, [props.instance.ID]);
  return (
    <Section
      title={`Payload of ${props.instance.Name}`}
      actions={<Button onClick={props.onClose}>Stop watching</Button>}
    >
      <ErrorNote error={error} />
      <pre class="block" aria-live="off">
        {payload === undefined ? 'No payload yet.' : JSON.stringify(payload, null, 2)}
      </pre>
    </Section>
  );
}
