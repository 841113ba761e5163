/**
 * Devices and tags: the device list (search, paging), the device form generated from the driver
 * catalogue, and a device's page (tags, import, export, browse) in device-tags.tsx.
 */
import { useEffect, useState } from 'preact/hooks';
import { errorText, gql, PATHS } from '../../shared/api.js';
import {
  useConfirm,
  initialValues,
  SchemaForm,
  SearchField,
  type FieldSpec,
  type FormValues,
} from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { href, navigate } from '../../shared/router.js';
import { Pager, Table } from '../../shared/table.js';
import {
  act,
  Button,
  ErrorNote,
  LinkButton,
  Page,
  Section,
  toast,
  useCanWrite,
  useLoad,
} from '../../shared/ui.js';
import { DEVICE_FIELDS, fieldsOf, listDrivers, type Device, type Driver } from '../devicehub.js';
import { DevicePage } from './device-tags.js';

const LIMIT = 25;

export default function Devices(props: { parts: string[] }) {
  const [id, sub] = props.parts;
  if (id === 'new') return <DeviceForm />;
  if (id && sub === 'edit') return <DeviceForm id={id} />;
  if (id) return <DevicePage id={id} />;
  return <DeviceList />;
}

function DeviceList() {
  const canWrite = useCanWrite();
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(
    () =>
      gql<{ ListDevices: { Items: Device[]; Total: number } }>(
        PATHS.devicehub,
        `query L($input: ListDevicesRequest) { ListDevices(input: $input) { Total Items { ${DEVICE_FIELDS} } } }`,
        {
          input: {
            Limit: LIMIT,
            Offset: offset,
            Sort: [{ Field: 'Name', Order: 'ASC' }],
            ...(search ? { Filter: { Name: { Contains: search } } } : {}),
          },
        },
      ),
    [offset, search],
  );
  const [askDelete, deleteDialog] = useConfirm<Device>({
    title: 'Delete device',
    confirmLabel: 'Delete device',
    danger: true,
    body: (d) => (
      <p>
        Delete device <strong>{d.Name}</strong> and all its tags?
      </p>
    ),
    onConfirm: (d) =>
      void act(
        () => gql(PATHS.devicehub, 'mutation D($IDs: [ID!]!) { DeleteDevices(IDs: $IDs) }', { IDs: [d.ID] }),
        `Device ${d.Name} deleted`,
        list.reload,
      ),
  });
  return (
    <Page
      title="Devices and tags"
      actions={canWrite && <LinkButton to="/devices/new">Add device</LinkButton>}
    >
      <Section title="Devices">
        <div class="row">
          <SearchField
            id="device-search"
            label="Search devices"
            value={search}
            onSearch={(v) => {
              setSearch(v);
              setOffset(0);
            }}
          />
        </div>
        <ErrorNote error={list.error} />
        <Table
          caption="Devices"
          rows={list.data?.ListDevices.Items ?? []}
          rowKey={(d) => d.ID}
          loading={list.loading && !list.data}
          empty="No device yet."
          columns={[
            { label: 'Name', render: (d) => <a href={href(`/devices/${d.ID}`)}>{d.Name}</a> },
            { label: 'Driver', render: (d) => d.DriverName },
            { label: 'Description', render: (d) => d.Description },
            { label: 'Updated', render: (d) => fmtTime(d.UpdateTime) },
          ]}
          actions={
            canWrite
              ? (d) => (
                  <>
                    <LinkButton to={`/devices/${d.ID}/edit`}>Edit {d.Name}</LinkButton>
                    <Button kind="danger" class="btn-small" onClick={() => askDelete(d)}>
                      Delete {d.Name}
                    </Button>
                  </>
                )
              : undefined
          }
        />
        <Pager
          label="Device pages"
          offset={offset}
          limit={LIMIT}
          total={list.data?.ListDevices.Total ?? 0}
          onOffset={setOffset}
        />
      </Section>
      {deleteDialog}
    </Page>
  );
}

const BASE_FIELDS: FieldSpec[] = [
  { name: 'Name', label: 'Device name', kind: 'text', required: true },
  { name: 'Description', label: 'Description', kind: 'text' },
];

function DeviceForm(props: { id?: string }) {
  const [drivers, setDrivers] = useState<Driver[]>([]);
  const [driverId, setDriverId] = useState('');
  const [values, setValues] = useState<FormValues>({});
  const [error, setError] = useState<string>();
  const [device, setDevice] = useState<Device>();
  useEffect(() => {
    listDrivers().then(setDrivers, (err: unknown) => setError(errorText(err)));
    if (props.id) {
      gql<{ GetDevice: Device | null }>(
        PATHS.devicehub,
        `query G($ID: ID!) { GetDevice(ID: $ID) { ${DEVICE_FIELDS} } }`,
        { ID: props.id },
      ).then(
        (r) => {
          if (!r.GetDevice) return setError('no such device');
          setDevice(r.GetDevice);
          setDriverId(r.GetDevice.DriverID);
        },
        (err: unknown) => setError(errorText(err)),
      );
    }
  }, [props.id]);
  const driver = drivers.find((d) => d.ID === driverId);
  const propFields = driver ? fieldsOf(driver.Properties) : [];
  const fields = [...BASE_FIELDS, ...propFields];
  useEffect(() => {
    if (!driver) return;
    const given: FormValues = {};
    if (device) {
      given.Name = device.Name;
      given.Description = device.Description;
      for (const p of device.Properties) given[p.Key] = p.Value;
    }
    setValues((v) =>
      initialValues(fields, {
        ...given,
        ...(device ? {} : { Name: v.Name ?? '', Description: v.Description ?? '' }),
      }),
    );
  }, [driverId, device, drivers.length]);
  const submit = async (v: FormValues) => {
    const Properties = propFields
      .filter((f) => v[f.name] !== '' && v[f.name] !== undefined)
      .map((f) => ({ Key: f.name, Value: v[f.name] }));
    const input = { Name: v.Name, Description: v.Description ?? '', Properties };
    if (props.id) {
      await gql(
        PATHS.devicehub,
        `mutation U($input: UpdateDeviceRequest!) { UpdateDevice(input: $input) { ID } }`,
        {
          input: { ID: props.id, ...input },
        },
      );
      toast(`Device ${v.Name} saved`);
      navigate(`/devices/${props.id}`);
    } else {
      const r = await gql<{ CreateDevice: { ID: string } }>(
        PATHS.devicehub,
        `mutation C($input: CreateDeviceRequest!) { CreateDevice(input: $input) { ID } }`,
        { input: { ...input, DriverID: driverId } },
      );
      toast(`Device ${v.Name} created`);
      navigate(`/devices/${r.CreateDevice.ID}`);
    }
  };
  return (
    <Page title={props.id ? `Edit device ${device?.Name ?? ''}` : 'Add device'}>
      <Section title={props.id ? 'Device settings' : 'New device'}>
        <ErrorNote error={error} />
        <div class="field">
          <label for="driver">Driver</label>
          <select
            id="driver"
            value={driverId}
            disabled={!!props.id}
            onChange={(e) => setDriverId(e.currentTarget.value)}
          >
            <option value="">Choose a driver…</option>
            {drivers.map((d) => (
              <option key={d.ID} value={d.ID}>
                {d.Name} ({d.Protocol})
              </option>
            ))}
          </select>
          {driver && <small class="hint">{driver.Description}</small>}
        </div>
        {driver && (
          <SchemaForm
            label="Device settings"
            fields={fields}
            values={values}
            onChange={setValues}
            onSubmit={submit}
            submitLabel={props.id ? 'Save device' : 'Create device'}
            onCancel={() => history.back()}
          />
        )}
      </Section>
    </Page>
  );
}
