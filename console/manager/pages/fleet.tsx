/**
 * Fleet: companies, projects and devices (online state, last heartbeat, edge version, CPU and
 * memory from the latest heartbeat, read one device at a time for the first 50), read again every
 * 3 s while the page is visible.
 */
import { useState } from 'preact/hooks';
import { SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtBytes, fmtNum, fmtTime } from '../../shared/format.js';
import { href } from '../../shared/router.js';
import { ListSection } from '../../shared/table.js';
import { Page, Stat, useCanWrite, useInterval, useLoad, toast } from '../../shared/ui.js';
import { StateBadge } from './status.js';
import { TopDevices } from './top.js';
import { get, mrest, type Company, type Device, type Page as List, type Project } from '../api.js';
import { useTitle } from '../session.js';

export { StateBadge };

export function deviceName(d: Pick<Device, 'name' | 'prettyName'>): string {
  return d.prettyName ?? d.name;
}

/** Devices with their details shown in full (version, metrics): the list itself is the contract's lite view. */
const DETAILED = 50;

async function loadDevices(): Promise<List<Device>> {
  const list = await get<List<Device>>('/api/v1/device/list?limit=500');
  const detailed = await Promise.all(
    list.items
      .slice(0, DETAILED)
      .map((d) => get<Device>(`/api/v1/device/${encodeURIComponent(d.id)}`).catch(() => d)),
  );
  return { items: [...detailed, ...list.items.slice(DETAILED)], total: list.total };
}

export default function Fleet() {
  useTitle('Fleet');
  const canWrite = useCanWrite();
  const companies = useLoad(() => get<List<Company>>('/api/v1/company/list/paged?limit=200'));
  const projects = useLoad(() => get<List<Project>>('/api/v1/project/paged?limit=500'));
  const devices = useLoad(loadDevices);
  useInterval(() => devices.reload(), 3000);
  const list = devices.data?.items ?? [];
  const online = list.filter((d) => d.online).length;
  const projectName = new Map(
    (projects.data?.items ?? []).map((p) => [p.id, `${p.companyName} / ${p.name}`]),
  );
  return (
    <Page title="Fleet">
      <div class="stats" role="group" aria-label="Fleet figures">
        <Stat label="Devices" value={devices.data ? fmtNum(devices.data.total) : undefined} />
        <Stat label="Online" value={devices.data ? fmtNum(online) : undefined} />
        <Stat label="Offline" value={devices.data ? fmtNum(list.length - online) : undefined} />
        <Stat label="Companies" value={companies.data ? fmtNum(companies.data.total) : undefined} />
      </div>
      <ListSection
        title="Devices"
        caption="Devices"
        error={devices.error}
        loading={devices.loading && !devices.data}
        rows={list}
        rowKey={(d) => d.id}
        empty="No device yet: create an activation code and enrol an edge."
        columns={[
          { label: 'Name', render: (d) => <a href={href(`/devices/${d.id}`)}>{deviceName(d)}</a> },
          { label: 'State', render: (d) => <StateBadge online={d.online} /> },
          { label: 'Last heartbeat', render: (d) => fmtTime(d.lastSeen) },
          { label: 'Version', render: (d) => d.edgeVersion ?? '—' },
          {
            label: 'CPU',
            numeric: true,
            render: (d) => (d.metrics?.cpuPercent === undefined ? '—' : `${d.metrics?.cpuPercent} %`),
          },
          { label: 'Memory', numeric: true, render: (d) => fmtBytes(d.metrics?.memoryBytes) },
          { label: 'Project', render: (d) => projectName.get(d.projectId) ?? d.projectId },
        ]}
      />
      <TopDevices projects={projects.data?.items ?? []} />
      <ListSection
        title="Companies"
        caption="Companies"
        error={companies.error}
        loading={companies.loading && !companies.data}
        rows={companies.data?.items ?? []}
        rowKey={(c) => c.id}
        columns={[
          { label: 'Company', render: (c) => c.companyName },
          { label: 'Projects', numeric: true, render: (c) => fmtNum(c.totalNumOfProjects) },
          { label: 'Devices', numeric: true, render: (c) => fmtNum(c.totalNumOfDevices) },
          { label: 'Created', render: (c) => fmtTime(c.createdAt) },
        ]}
      >
        {canWrite && <NewCompany onDone={companies.reload} />}
      </ListSection>
      <ListSection
        title="Projects"
        caption="Projects"
        error={projects.error}
        loading={projects.loading && !projects.data}
        rows={projects.data?.items ?? []}
        rowKey={(p) => p.id}
        columns={[
          { label: 'Project', render: (p) => p.name },
          { label: 'Company', render: (p) => p.companyName },
          { label: 'Devices', numeric: true, render: (p) => fmtNum(p.totalNumOfDevices) },
          { label: 'Created', render: (p) => fmtTime(p.createdAt) },
        ]}
      >
        {canWrite && (
          <NewProject
            companies={companies.data?.items ?? []}
            onDone={() => {
              projects.reload();
              companies.reload();
            }}
          />
        )}
      </ListSection>
    </Page>
  );
}

function NewCompany(props: { onDone: () => void }) {
  const fields: FieldSpec[] = [{ name: 'companyName', label: 'Company name', kind: 'text', required: true }];
  const [values, setValues] = useState<FormValues>({ companyName: '' });
  return (
    <SchemaForm
      label="New company"
      inline
      fields={fields}
      values={values}
      onChange={setValues}
      submitLabel="Create company"
      onSubmit={async (v) => {
        await mrest('POST', '/api/v1/company', { companyName: v.companyName });
        toast(`Company ${v.companyName} created`);
        setValues({ companyName: '' });
        props.onDone();
      }}
    />
  );
}

function NewProject(props: { companies: Company[]; onDone: () => void }) {
  const fields: FieldSpec[] = [
    {
      name: 'companyId',
      label: 'Company of the project',
      kind: 'select',
      required: true,
      options: props.companies.map((c) => ({ value: c.id, label: c.companyName })),
    },
    { name: 'name', label: 'Project name', kind: 'text', required: true },
  ];
  const [values, setValues] = useState<FormValues>({ companyId: '', name: '' });
  const companyId = values.companyId || props.companies[0]?.id || '';
  return (
    <SchemaForm
      label="New project"
      inline
      fields={fields}
      values={{ ...values, companyId }}
      onChange={setValues}
      submitLabel="Create project"
      onSubmit={async (v) => {
        await mrest('POST', '/api/v1/project', { companyId: v.companyId || companyId, name: v.name });
        toast(`Project ${v.name} created`);
        setValues({ companyId, name: '' });
        props.onDone();
      }}
    />
  );
}
