/**
 * Activation: an activation code for a project (with the edge's name), the steps to take on the
 * edge, and the codes' status read again every 2 s, so that the enrolled device appears here.
 */
import { useState } from 'preact/hooks';
import { SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { href } from '../../shared/router.js';
import { ListSection } from '../../shared/table.js';
import { Badge, Page, Section, toneOf, useCanWrite, useInterval, useLoad } from '../../shared/ui.js';
import { get, mrest, type Page as List, type Project } from '../api.js';
import { useTitle } from '../session.js';

interface Code {
  id: string;
  code: string;
  projectId: string;
  deviceName: string | null;
  expiresAt: string;
}

interface CodeStatus {
  id: string;
  projectId: string;
  deviceName: string | null;
  status: string;
  deviceId: string | null;
  expiresAt: string;
  activatedAt: string | null;
  createdAt: string;
}

export default function Activation() {
  useTitle('Activation');
  const canWrite = useCanWrite();
  const projects = useLoad(() => get<List<Project>>('/api/v1/project/paged?limit=500'));
  const status = useLoad(() =>
    get<List<CodeStatus>>('/api/v1/activation/device-status?limit=100&sort=createdAt:desc'),
  );
  useInterval(() => status.reload(), 2000);
  const [made, setMade] = useState<Code>();
  const names = new Map((projects.data?.items ?? []).map((p) => [p.id, `${p.companyName} / ${p.name}`]));
  return (
    <Page title="Activation">
      {canWrite && (
        <Section title="New activation code">
          {projects.data && projects.data.items.length === 0 ? (
            <p>
              Create a company and a project on the <a href={href('/fleet')}>Fleet</a> page first.
            </p>
          ) : (
            <NewCode projects={projects.data?.items ?? []} onMade={(c) => (setMade(c), status.reload())} />
          )}
          {made && <EdgeSteps code={made} />}
        </Section>
      )}
      <ListSection
        title="Activation codes"
        caption="Activation codes"
        error={status.error}
        loading={status.loading && !status.data}
        rows={status.data?.items ?? []}
        rowKey={(c) => c.id}
        empty="No activation code yet."
        columns={[
          { label: 'Edge name', render: (c) => c.deviceName ?? '—' },
          { label: 'Project', render: (c) => names.get(c.projectId) ?? c.projectId },
          {
            label: 'Status',
            render: (c) => (
              <Badge tone={toneOf(c.status === 'ACTIVATED' ? 'ok' : c.status)}>{c.status}</Badge>
            ),
          },
          {
            label: 'Device',
            render: (c) =>
              c.deviceId ? (
                <a href={href(`/devices/${c.deviceId}`)}>Open device {c.deviceName ?? c.deviceId}</a>
              ) : (
                '—'
              ),
          },
          { label: 'Expires', render: (c) => fmtTime(c.expiresAt) },
          { label: 'Activated', render: (c) => fmtTime(c.activatedAt) },
        ]}
      />
    </Page>
  );
}

function NewCode(props: { projects: Project[]; onMade: (c: Code) => void }) {
  const fields: FieldSpec[] = [
    {
      name: 'projectId',
      label: 'Project',
      kind: 'select',
      required: true,
      options: props.projects.map((p) => ({ value: p.id, label: `${p.companyName} / ${p.name}` })),
    },
    {
      name: 'deviceName',
      label: 'Edge name',
      kind: 'text',
      description: 'optional: the name the device gets',
    },
  ];
  const [values, setValues] = useState<FormValues>({ projectId: '', deviceName: '' });
  const projectId = values.projectId || props.projects[0]?.id || '';
  return (
    <SchemaForm
      label="New activation code"
      inline
      fields={fields}
      values={{ ...values, projectId }}
      onChange={setValues}
      submitLabel="Create activation code"
      onSubmit={async (v) => {
        const code = await mrest<Code>('POST', '/api/v1/activation/code', {
          projectId: v.projectId || projectId,
          ...(v.deviceName ? { deviceName: v.deviceName } : {}),
        });
        props.onMade(code);
      }}
    />
  );
}

function EdgeSteps(props: { code: Code }) {
  const origin = location.origin;
  return (
    <div class="secret" role="status" aria-label="Activation code">
      <p>
        Activation code <strong class="mono">{props.code.code}</strong> (valid until{' '}
        {fmtTime(props.code.expiresAt)}).
      </p>
      <p>On the edge to enrol:</p>
      <ol>
        <li>
          Open the edge console, <strong>Settings → Manager connection</strong>.
        </li>
        <li>
          Set <strong>Manager address</strong> to <span class="mono">{origin}</span> and press{' '}
          <strong>Set manager address</strong>.
        </li>
        <li>
          Compare the certificate fingerprint with this manager's, then press{' '}
          <strong>Confirm certificate</strong>.
        </li>
        <li>
          Enter the activation code
          {props.code.deviceName ? ` and the edge name ${props.code.deviceName}` : ''}, then press{' '}
          <strong>Send activation code</strong>.
        </li>
      </ol>
      <p class="muted">
        The device appears below as soon as the edge has used the code, and on the Fleet page once its link is
        up.
      </p>
    </div>
  );
}
