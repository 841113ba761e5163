/**
 * A device's page: its tags paged with the API's cursor (100 a page, so that 100,000 tags never
 * freeze the page) with the current values of the visible page, the tag form generated from the
 * driver's registers, CSV import with progress and per-line failures, export, and browsing.
 */
import { useEffect, useState } from 'preact/hooks';
import { gql, PATHS } from '../../shared/api.js';
import {
  useConfirm,
  initialValues,
  SchemaForm,
  SearchField,
  type FieldSpec,
  type FormValues,
} from '../../shared/form.js';
import { download, fmtTime, fmtValue } from '../../shared/format.js';
import { PagerNav, Table } from '../../shared/table.js';
import {
  act,
  Badge,
  Button,
  ErrorNote,
  LinkButton,
  Page,
  Section,
  toast,
  toastError,
  toneOf,
  useCanWrite,
  useInterval,
  useLoad,
} from '../../shared/ui.js';
import {
  DEVICE_FIELDS,
  fieldsOf,
  listDrivers,
  REGISTER_FIELDS,
  type Device,
  type Driver,
  type Register,
  type TagStatus,
} from '../devicehub.js';
import { BrowseSection } from './device-browse.js';
import { CsvImport } from './device-import.js';

const PAGE = 100;

export function DevicePage(props: { id: string }) {
  const canWrite = useCanWrite();
  const [adding, setAdding] = useState(false);
  const [tick, setTick] = useState(0);
  const device = useLoad(async () => {
    const r = await gql<{ GetDevice: Device | null }>(
      PATHS.devicehub,
      `query G($ID: ID!) { GetDevice(ID: $ID) { ${DEVICE_FIELDS} } }`,
      {
        ID: props.id,
      },
    );
    if (!r.GetDevice) throw new Error('no such device');
    const driver = (await listDrivers()).find((d) => d.ID === r.GetDevice!.DriverID);
    return { device: r.GetDevice, driver };
  }, [props.id]);
  const d = device.data?.device;
  const exportCsv = async () => {
    try {
      const r = await gql<{ ExportCsv: string }>(
        PATHS.devicehub,
        'query E($IDs: [ID!]) { ExportCsv(DeviceIDs: $IDs) }',
        { IDs: [props.id] },
      );
      download(`${d?.Name ?? 'tags'}.csv`, r.ExportCsv, 'text/csv');
    } catch (err) {
      toastError(err);
    }
  };
  return (
    <Page
      title={d ? `Device ${d.Name}` : 'Device'}
      actions={
        <>
          <LinkButton to="/devices">All devices</LinkButton>
          {canWrite && d && <LinkButton to={`/devices/${d.ID}/edit`}>Edit device</LinkButton>}
          <Button onClick={() => void exportCsv()}>Export CSV</Button>
        </>
      }
    >
      <ErrorNote error={device.error} />
      {d && (
        <p class="muted">
          Driver {d.DriverName}. {d.Description}
        </p>
      )}
      {canWrite && device.data?.driver && (
        <Section
          title="Add a tag"
          actions={
            <Button onClick={() => setAdding(!adding)}>
              {adding ? 'Hide the tag form' : 'Show the tag form'}
            </Button>
          }
        >
          {adding && (
            <TagForm deviceId={props.id} driver={device.data.driver} onDone={() => setTick((t) => t + 1)} />
          )}
        </Section>
      )}
      <TagList deviceId={props.id} tick={tick} />
      {canWrite && <CsvImport onDone={() => setTick((t) => t + 1)} />}
      {canWrite && device.data?.driver?.Browsable && (
        <BrowseSection deviceId={props.id} onDone={() => setTick((t) => t + 1)} />
      )}
    </Page>
  );
}

function TagList(props: { deviceId: string; tick: number }) {
  const canWrite = useCanWrite();
  const [pattern, setPattern] = useState('');
  // The cursors of the pages before this one (ContinueFrom), so that Previous is exact.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [status, setStatus] = useState<Record<string, TagStatus>>({});
  const from = cursors[cursors.length - 1];
  const page = useLoad(
    () =>
      gql<{ ListRegisters: { TotalCount: number; Last: string | null; Registers: Register[] } }>(
        PATHS.devicehub,
        `query R($input: ListRegistersRequest!) { ListRegisters(input: $input) { TotalCount Last Registers { ${REGISTER_FIELDS} } } }`,
        {
          input: {
            DeviceID: props.deviceId,
            Limit: PAGE,
            ...(from ? { ContinueFrom: from } : {}),
            ...(pattern ? { TagPattern: pattern, TagPatternSearchOption: 'CONTAINS' } : {}),
          },
        },
      ),
    [props.deviceId, from, pattern, props.tick],
  );
  const rows = page.data?.ListRegisters.Registers ?? [];
  const refreshValues = async () => {
    if (rows.length === 0) return;
    const r = await gql<{ GetTagStatus: TagStatus[] }>(
      PATHS.devicehub,
      'query S($IDs: [ID!]!) { GetTagStatus(IDs: $IDs) { ID State Reason Value Timestamp } }',
      {
        IDs: rows.map((x) => x.ID),
      },
    );
    setStatus(Object.fromEntries(r.GetTagStatus.map((s) => [s.ID, s])));
  };
  useEffect(() => void refreshValues().catch(() => undefined), [page.data]);
  useInterval(() => void refreshValues().catch(() => undefined), 3000);
  const total = page.data?.ListRegisters.TotalCount ?? 0;
  const [askDelete, deleteDialog] = useConfirm<Register>({
    title: 'Delete tag',
    confirmLabel: 'Delete tag',
    danger: true,
    body: (r) => (
      <p>
        Delete tag <strong>{r.TagName}</strong>?
      </p>
    ),
    onConfirm: (r) =>
      void act(
        () =>
          gql(PATHS.devicehub, 'mutation D($IDs: [ID!]!) { DeleteRegisters(IDs: $IDs) }', { IDs: [r.ID] }),
        `Tag ${r.TagName} deleted`,
        page.reload,
      ),
  });
  return (
    <Section title="Tags">
      <div class="row">
        <SearchField
          id="tag-search"
          label="Search tags"
          value={pattern}
          onSearch={(v) => {
            setPattern(v);
            setCursors([null]);
          }}
        />
      </div>
      <ErrorNote error={page.error} />
      <Table
        caption="Tags of the device"
        rows={rows}
        rowKey={(r) => r.ID}
        loading={page.loading && !page.data}
        busy={page.loading}
        empty="No tag."
        columns={[
          { label: 'Tag', render: (r) => r.TagName },
          { label: 'Register', render: (r) => r.Name },
          { label: 'Type', render: (r) => r.ValueType },
          { label: 'Interval (ms)', render: (r) => r.IntervalMs, numeric: true },
          {
            label: 'Value',
            render: (r) => <span class="mono">{fmtValue(status[r.ID]?.Value)}</span>,
            numeric: true,
          },
          {
            label: 'State',
            render: (r) =>
              status[r.ID] && <Badge tone={toneOf(status[r.ID]!.State)}>{status[r.ID]!.State}</Badge>,
          },
          { label: 'Since', render: (r) => fmtTime(status[r.ID]?.Timestamp) },
        ]}
        actions={
          canWrite
            ? (r) => (
                <Button kind="danger" class="btn-small" onClick={() => askDelete(r)}>
                  Delete {r.TagName}
                </Button>
              )
            : undefined
        }
      />
      <PagerNav
        label="Tag pages"
        page={cursors.length}
        pages={Math.max(1, Math.ceil(total / PAGE))}
        total={`${total} tags`}
        hasPrevious={cursors.length > 1}
        hasNext={cursors.length * PAGE < total && !!page.data?.ListRegisters.Last}
        onPrevious={() => setCursors(cursors.slice(0, -1))}
        onNext={() => setCursors([...cursors, page.data!.ListRegisters.Last])}
      />
      {deleteDialog}
    </Section>
  );
}

function TagForm(props: { deviceId: string; driver: Driver; onDone: () => void }) {
  const registers = props.driver.Registers;
  const [register, setRegister] = useState(registers[0]?.Name ?? '');
  const reg = registers.find((r) => r.Name === register);
  const fields: FieldSpec[] = [
    { name: 'TagName', label: 'Tag name', kind: 'text', required: true },
    {
      name: 'ValueType',
      label: 'Value type',
      kind: 'select',
      required: true,
      options: (reg?.ValueTypes ?? []).map((v) => ({ value: v, label: v })),
      ...(reg?.ValueTypes[0] ? { default: reg.ValueTypes[0] } : {}),
    },
    { name: 'IntervalMs', label: 'Poll interval (ms)', kind: 'number', default: '1000', min: 1 },
    { name: 'Description', label: 'Tag description', kind: 'text' },
    ...fieldsOf(reg?.Properties ?? []),
  ];
  const [values, setValues] = useState<FormValues>(() => initialValues(fields));
  useEffect(() => setValues((v) => initialValues(fields, { TagName: v.TagName ?? '' })), [register]);
  const submit = async (v: FormValues) => {
    const own = new Set(['TagName', 'ValueType', 'IntervalMs', 'Description']);
    await gql(
      PATHS.devicehub,
      'mutation C($input: CreateRegisterRequest!) { CreateRegister(input: $input) { ID } }',
      {
        input: {
          DeviceID: props.deviceId,
          Name: register,
          TagName: v.TagName,
          ValueType: v.ValueType,
          Description: v.Description ?? '',
          ...(v.IntervalMs ? { IntervalMs: Number(v.IntervalMs) } : {}),
          Properties: fields
            .filter((f) => !own.has(f.name) && v[f.name])
            .map((f) => ({ Name: f.name, Value: v[f.name] })),
        },
      },
    );
    toast(`Tag ${v.TagName} created`);
    setValues(initialValues(fields));
    props.onDone();
  };
  return (
    <>
      <div class="field">
        <label for="tag-register">Register</label>
        <select id="tag-register" value={register} onChange={(e) => setRegister(e.currentTarget.value)}>
          {registers.map((r) => (
            <option key={r.Name} value={r.Name}>
              {r.Name} {r.Description ? `(${r.Description})` : ''}
            </option>
          ))}
        </select>
      </div>
      <SchemaForm
        label="New tag"
        fields={fields}
        values={values}
        onChange={setValues}
        onSubmit={submit}
        submitLabel="Create tag"
      />
    </>
  );
}
