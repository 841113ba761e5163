/** Digital twins: models and instances, each instance's state and its last payload (live over `DataAccess`). */
import { useEffect, useState } from 'preact/hooks';
import { TWINS } from '../../../src/client/twins.js';
import { errorText, gql, PATHS } from '../../shared/api.js';
import { initialValues, SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { Table } from '../../shared/table.js';
import {
  Badge,
  Button,
  ErrorNote,
  Page,
  Section,
  toast,
  toastError,
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
  const [newInstance, setNewInstance] = useState<FormValues>({ ModelID: '', Name: '' });
  const [error, setError] = useState<string>();
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
  const createInstance = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      await gql(PATHS.twins, TWINS.CreateInstance, {
        input: { ModelID: newInstance.ModelID, Name: newInstance.Name },
      });
      toast(`Instance ${newInstance.Name} created`);
      instances.reload();
      models.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const removeModel = async (m: Model) => {
    try {
      await gql(PATHS.twins, TWINS.DeleteModel, { input: { ID: m.ID } });
      models.reload();
      instances.reload();
    } catch (err) {
      toastError(err);
    }
  };
  return (
    <Page title="Digital twins">
      <Section title="Models">
        <ErrorNote error={models.error} />
        <Table
          caption="Models"
          rows={models.data?.ListModels.Items ?? []}
          rowKey={(m) => m.ID}
          empty="No model yet."
          columns={[
            { label: 'Model', render: (m) => m.Name },
            { label: 'Assets', render: (m) => m.Assets },
            { label: 'Instances', render: (m) => m.InstanceCount, numeric: true },
            { label: 'Dynamic attributes', render: (m) => m.DynamicAttributeCount, numeric: true },
            ...(canWrite
              ? [
                  {
                    label: 'Actions',
                    render: (m: Model) => (
                      <Button class="btn-small" kind="danger" onClick={() => void removeModel(m)}>
                        Delete model {m.Name}
                      </Button>
                    ),
                  },
                ]
              : []),
          ]}
        />
        {canWrite && (
          <SchemaForm
            label="New model"
            fields={MODEL_FIELDS}
            values={values}
            onChange={setValues}
            onSubmit={createModel}
            submitLabel="Create model"
            errorOf={errorText}
          />
        )}
      </Section>
      <Section title="Instances">
        <ErrorNote error={instances.error} />
        <Table
          caption="Instances"
          rows={list}
          rowKey={(i) => i.ID}
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
            {
              label: 'Actions',
              render: (i) => (
                <Button class="btn-small" onClick={() => setWatching(i)}>
                  Watch {i.Name}
                </Button>
              ),
            },
          ]}
        />
        {canWrite && (
          <form class="row" aria-label="New instance" onSubmit={createInstance}>
            <div class="field">
              <label for="twin-model">Model of the instance</label>
              <select
                id="twin-model"
                value={newInstance.ModelID}
                onChange={(e) => setNewInstance({ ...newInstance, ModelID: e.currentTarget.value })}
              >
                <option value="">Choose a model…</option>
                {(models.data?.ListModels.Items ?? []).map((m) => (
                  <option key={m.ID} value={m.ID}>
                    {m.Name}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="twin-name">Instance name</label>
              <input
                id="twin-name"
                value={newInstance.Name}
                onInput={(e) => setNewInstance({ ...newInstance, Name: e.currentTarget.value })}
              />
            </div>
            <button type="submit" class="btn btn-primary">
              Create instance
            </button>
          </form>
        )}
        <ErrorNote error={error} />
      </Section>
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
