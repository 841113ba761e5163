/**
 * Templates: the configuration templates the caller may read (name, version, sections), an
 * upload (a template document as a JSON file, into a project), one template's versions, and the
 * apply to a project's devices as a task (whose page follows its subtasks).
 */
import { useState } from 'preact/hooks';
import { SchemaForm, useId, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtBytes, fmtTime } from '../../shared/format.js';
import { navigate } from '../../shared/router.js';
import { ListSection } from '../../shared/table.js';
import { Button, Section, Page, toast, useCanWrite, useLoad } from '../../shared/ui.js';
import { get, mrest, type Device, type Page as List, type Project, type Template } from '../api.js';
import { useTitle } from '../session.js';

interface Version {
  version: number;
  friendlyName: string;
  updatedBy: string | null;
  updatedAt: string;
}

export default function Templates() {
  useTitle('Templates');
  const canWrite = useCanWrite();
  const templates = useLoad(() => get<List<Template>>('/api/v1/template/list?limit=200'));
  const projects = useLoad(() => get<List<Project>>('/api/v1/project/paged?limit=500'));
  const [chosen, setChosen] = useState<Template>();
  return (
    <Page title="Templates">
      <ListSection
        title="Templates"
        caption="Templates"
        error={templates.error}
        loading={templates.loading && !templates.data}
        rows={templates.data?.items ?? []}
        rowKey={(t) => t.id}
        empty="No template yet."
        columns={[
          { label: 'Name', render: (t) => t.friendlyName },
          { label: 'Version', numeric: true, render: (t) => String(t.version) },
          { label: 'Sections', render: (t) => t.sections.join(', ') },
          { label: 'Size', numeric: true, render: (t) => fmtBytes(t.size) },
          { label: 'Created', render: (t) => fmtTime(t.createdAt) },
        ]}
        actions={(t) => (
          <Button onClick={() => setChosen(t)} aria-label={`Open ${t.friendlyName}`}>
            Open
          </Button>
        )}
      >
        {canWrite && <Upload projects={projects.data?.items ?? []} onDone={templates.reload} />}
      </ListSection>
      {canWrite && (
        <Section title="Capture a template from a device">
          <Capture onDone={templates.reload} />
        </Section>
      )}
      {chosen && <TemplateDetail key={chosen.id} template={chosen} projects={projects.data?.items ?? []} />}
    </Page>
  );
}

function Upload(props: { projects: Project[]; onDone: () => void }) {
  const fileId = useId('template-file');
  const [file, setFile] = useState<File>();
  const fields: FieldSpec[] = [
    { name: 'friendlyName', label: 'Template name', kind: 'text', required: true },
    {
      name: 'projectId',
      label: 'Project of the template',
      kind: 'select',
      options: props.projects.map((p) => ({ value: p.id, label: `${p.companyName} / ${p.name}` })),
    },
  ];
  const [values, setValues] = useState<FormValues>({ friendlyName: '', projectId: '' });
  const projectId = values.projectId || props.projects[0]?.id || '';
  return (
    <SchemaForm
      label="Upload a template"
      fields={fields}
      values={{ ...values, projectId }}
      onChange={setValues}
      submitLabel="Upload template"
      onSubmit={async (v) => {
        if (!file) throw new Error('choose a template file (JSON) first');
        let content: unknown;
        try {
          content = JSON.parse(await file.text());
        } catch {
          throw new Error(`${file.name} is not JSON`);
        }
        await mrest('POST', '/api/v1/template/create/v2', {
          friendlyName: v.friendlyName,
          ...(projectId ? { projectId } : {}),
          content,
        });
        toast(`Template ${v.friendlyName} uploaded`);
        props.onDone();
      }}
    >
      <div class="field">
        <label for={fileId}>Template file</label>
        <input
          id={fileId}
          type="file"
          accept=".json,application/json"
          onChange={(e) => setFile(e.currentTarget.files?.[0])}
        />
      </div>
    </SchemaForm>
  );
}

/** A template made from a linked device's current configuration (the edge exports it over the bridge). */
function Capture(props: { onDone: () => void }) {
  const devices = useLoad(() => get<List<Device>>('/api/v1/device/list?limit=500'));
  const fields: FieldSpec[] = [
    {
      name: 'deviceId',
      label: 'Device to capture',
      kind: 'select',
      required: true,
      options: (devices.data?.items ?? []).map((d) => ({ value: d.id, label: d.prettyName ?? d.name })),
    },
    { name: 'friendlyName', label: 'Name of the captured template', kind: 'text', required: true },
  ];
  const [values, setValues] = useState<FormValues>({ deviceId: '', friendlyName: '' });
  const deviceId = values.deviceId || devices.data?.items[0]?.id || '';
  return (
    <SchemaForm
      label="Capture a template"
      inline
      fields={fields}
      values={{ ...values, deviceId }}
      onChange={setValues}
      submitLabel="Capture template"
      onSubmit={async (v) => {
        await mrest('POST', '/api/v1/template/create', {
          deviceId: v.deviceId || deviceId,
          friendlyName: v.friendlyName,
        });
        toast(`Template ${v.friendlyName} captured`);
        setValues({ deviceId, friendlyName: '' });
        props.onDone();
      }}
    />
  );
}

function TemplateDetail(props: { template: Template; projects: Project[] }) {
  const t = props.template;
  const canWrite = useCanWrite();
  const detail = useLoad(
    () => get<Template & { versions: Version[] }>(`/api/v1/template/${encodeURIComponent(t.id)}`),
    [t.id],
  );
  const fields: FieldSpec[] = [
    {
      name: 'projectId',
      label: 'Apply to the devices of the project',
      kind: 'select',
      required: true,
      options: props.projects.map((p) => ({ value: p.id, label: `${p.companyName} / ${p.name}` })),
    },
  ];
  const [values, setValues] = useState<FormValues>({ projectId: t.projectId ?? '' });
  const projectId = values.projectId || props.projects[0]?.id || '';
  return (
    <>
      <ListSection
        title={`Versions of ${t.friendlyName}`}
        caption={`Versions of ${t.friendlyName}`}
        error={detail.error}
        loading={detail.loading && !detail.data}
        rows={detail.data?.versions ?? []}
        rowKey={(v) => String(v.version)}
        columns={[
          { label: 'Version', numeric: true, render: (v) => String(v.version) },
          { label: 'Name', render: (v) => v.friendlyName },
          { label: 'By', render: (v) => v.updatedBy ?? '' },
          { label: 'At', render: (v) => fmtTime(v.updatedAt) },
        ]}
      />
      {canWrite && (
        <Section title={`Apply ${t.friendlyName}`}>
          <SchemaForm
            label={`Apply ${t.friendlyName}`}
            inline
            fields={fields}
            values={{ projectId }}
            onChange={setValues}
            submitLabel="Apply as a task"
            onSubmit={async (v) => {
              const task = await mrest<{ taskId: string }>('POST', '/api/v1/async-task/template-apply', {
                templateId: t.id,
                projectId: v.projectId || projectId,
              });
              toast('Task created');
              navigate(`/tasks/${task.taskId}`);
            }}
          />
        </Section>
      )}
    </>
  );
}
