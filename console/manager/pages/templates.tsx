/**
 * Templates: the configuration templates the caller may read (name, version, sections, parts),
 * an upload (a template document as a JSON file, into a project), a composition (a template made
 * of others), a capture from a device; the chosen template's page is template-detail.tsx.
 */
import { useState } from 'preact/hooks';
import { Checklist, SchemaForm, useId, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtBytes, fmtTime } from '../../shared/format.js';
import { ListSection } from '../../shared/table.js';
import { Button, Section, Page, toast, useCanWrite, useLoad } from '../../shared/ui.js';
import { TemplateDetail } from './template-detail.js';
import { get, mrest, type Device, type Page as List, type Project, type Template } from '../api.js';
import { useTitle } from '../session.js';

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
          {
            label: 'Made of',
            render: (t) => (t.parts ?? []).map((p) => `${p.friendlyName} (v${p.version})`).join(' + '),
          },
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
        <Section title="Compose a template">
          <Compose
            templates={templates.data?.items ?? []}
            projects={projects.data?.items ?? []}
            onDone={templates.reload}
          />
        </Section>
      )}
      {canWrite && (
        <Section title="Capture a template from a device">
          <Capture onDone={templates.reload} />
        </Section>
      )}
      {chosen && <TemplateDetail key={chosen.id} template={chosen} />}
    </Page>
  );
}

/** The fields of a new template: its name, and the project it is kept in. */
function nameAndProject(name: string, project: string, projects: Project[]): FieldSpec[] {
  return [
    { name: 'friendlyName', label: name, kind: 'text', required: true },
    {
      name: 'projectId',
      label: project,
      kind: 'select',
      options: projects.map((p) => ({ value: p.id, label: `${p.companyName} / ${p.name}` })),
    },
  ];
}

function Upload(props: { projects: Project[]; onDone: () => void }) {
  const fileId = useId('template-file');
  const [file, setFile] = useState<File>();
  const fields = nameAndProject('Template name', 'Project of the template', props.projects);
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

/** A template made of others: each section from one part, in the order they are checked. */
function Compose(props: { templates: Template[]; projects: Project[]; onDone: () => void }) {
  const [parts, setParts] = useState<string[]>([]);
  const fields = nameAndProject(
    'Name of the composed template',
    'Project of the composed template',
    props.projects,
  );
  const [values, setValues] = useState<FormValues>({ friendlyName: '', projectId: '' });
  const projectId = values.projectId || props.projects[0]?.id || '';
  return (
    <SchemaForm
      label="Compose a template"
      fields={fields}
      values={{ ...values, projectId }}
      onChange={setValues}
      submitLabel="Compose template"
      onSubmit={async (v) => {
        const made = await mrest<Template>('POST', '/api/v1/template/create/v2', {
          friendlyName: v.friendlyName,
          ...(projectId ? { projectId } : {}),
          parts,
        });
        toast(`Template ${made.friendlyName} composed of ${parts.length} templates`);
        setParts([]);
        setValues({ friendlyName: '', projectId });
        props.onDone();
      }}
    >
      <p class="muted">
        Each section of the new template comes from one part (two parts with the same section are refused).
      </p>
      <Checklist
        legend="Parts, in order"
        options={props.templates.map((t) => ({
          value: t.id,
          label: `${t.friendlyName} (v${t.version}: ${t.sections.join(', ')})`,
        }))}
        selected={parts}
        onChange={setParts}
        empty="No template to compose yet."
      />
    </SchemaForm>
  );
}
