/**
 * One template: its versions, its composition (sections, items, the templates it was made of),
 * its variables by scope (template-vars.tsx), a preview per device as a diff of the device's
 * current configuration and what the template would make of it, and the apply to the chosen
 * devices as a task, whose page follows it live (`TaskProgress`: every subtask, cancel, resume).
 */
import { useState } from 'preact/hooks';
import { DiffView, jsonLines } from '../../shared/diff.js';
import { Checklist, Field } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { ListSection, Table } from '../../shared/table.js';
import { errorText } from '../../shared/api.js';
import { navigate } from '../../shared/router.js';
import { Badge, Button, ErrorNote, Section, toast, useCanWrite, useLoad } from '../../shared/ui.js';
import { get, mrest, type Device, type Page as List, type Template } from '../api.js';
import { TemplateVars } from './template-vars.js';

interface Version {
  version: number;
  friendlyName: string;
  updatedBy: string | null;
  updatedAt: string;
}

interface Composition {
  sections: { section: string; items: Record<string, number> }[];
  parts: { id: string; friendlyName: string; version: number }[] | null;
}

interface SectionChange {
  added: string[];
  changed: string[];
  removed: string[];
  restarts: string[];
}

interface PreviewItem {
  deviceId: string;
  status: 'OK' | 'OFFLINE' | 'FAILED' | 'UNSUPPORTED';
  error?: { code: string; message: string };
  preview?: { sections: Record<string, SectionChange>; restarts: string[] };
  content?:
    | { sections: Record<string, { current: unknown; proposed: unknown }> }
    | { truncated: true; bytes: number };
}

const MODES = [
  { value: 'legacy', label: 'legacy (replace the template’s items)' },
  { value: 'use', label: 'use (sections become the template)' },
  { value: 'merge-apply', label: 'merge-apply (merge field by field)' },
];

export function TemplateDetail(props: { template: Template }) {
  const t = props.template;
  const id = encodeURIComponent(t.id);
  const detail = useLoad(() => get<Template & { versions: Version[] }>(`/api/v1/template/${id}`), [t.id]);
  const composition = useLoad(() => get<Composition>(`/api/v1/template/composition/v2?id=${id}`), [t.id]);
  const devices = useLoad(() => get<List<Device>>('/api/v1/device/list?limit=500'));
  const names = new Map((devices.data?.items ?? []).map((d) => [d.id, d.prettyName ?? d.name]));
  const c = composition.data;
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
      <Section title={`Composition of ${t.friendlyName}`}>
        <ErrorNote error={composition.error} />
        {c?.parts ? (
          <p>
            Made of{' '}
            {c.parts.map((p, i) => (
              <span key={p.id}>
                {i > 0 && ' + '}
                <strong>{p.friendlyName}</strong> (version {p.version})
              </span>
            ))}
            .
          </p>
        ) : (
          <p class="muted">Not composed of other templates.</p>
        )}
        <Table
          caption={`Sections of ${t.friendlyName}`}
          loading={composition.loading && !c}
          rows={c?.sections ?? []}
          rowKey={(s) => s.section}
          columns={[
            { label: 'Section', render: (s) => s.section },
            {
              label: 'Items',
              render: (s) =>
                Object.entries(s.items)
                  .map(([k, n]) => `${n} ${k}`)
                  .join(', ') || '—',
            },
          ]}
        />
      </Section>
      <TemplateVars template={t} devices={devices.data?.items ?? []} />
      <PreviewAndApply template={t} devices={devices.data?.items ?? []} names={names} />
    </>
  );
}

/** The devices chosen once, for the preview (as a diff per device) and for the apply (a task). */
function PreviewAndApply(props: { template: Template; devices: Device[]; names: Map<string, string> }) {
  const t = props.template;
  const canWrite = useCanWrite();
  const [chosen, setChosen] = useState<string[]>([]);
  const [mode, setMode] = useState('legacy');
  const [busy, setBusy] = useState<'preview' | 'apply'>();
  const [error, setError] = useState<string>();
  const [preview, setPreview] = useState<PreviewItem[]>();
  const run = async (what: 'preview' | 'apply') => {
    // The buttons stay enabled (a disabled button would drop the keyboard focus): a second press waits.
    if (busy) return;
    setError(undefined);
    if (chosen.length === 0) {
      setError('choose at least one device');
      return;
    }
    setBusy(what);
    try {
      const body = { templateId: t.id, deviceIds: chosen, mode };
      if (what === 'preview') {
        const r = await mrest<{ items: PreviewItem[] }>('POST', '/api/v1/template/preview', {
          ...body,
          withContent: true,
        });
        setPreview(r.items);
      } else {
        const task = await mrest<{ taskId: string }>('POST', '/api/v1/async-task/template-apply', body);
        toast(`Applying ${t.friendlyName} to ${chosen.length} device(s)`);
        // The task's page follows every subtask live (TaskProgress), with cancel and resume.
        navigate(`/tasks/${task.taskId}`);
      }
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <>
      <Section title={`Preview and apply ${t.friendlyName}`}>
        <Checklist
          legend="Devices"
          options={props.devices.map((d) => ({
            value: d.id,
            label: `${d.prettyName ?? d.name}${d.online ? '' : ' (offline)'}`,
          }))}
          selected={chosen}
          onChange={setChosen}
          empty="No device in the fleet yet."
        />
        <div class="row">
          <Field
            spec={{ name: 'mode', label: 'Apply mode', kind: 'select', required: true, options: MODES }}
            value={mode}
            onInput={setMode}
          />
          <Button onClick={() => void run('preview')} aria-busy={busy === 'preview' || undefined}>
            {busy === 'preview' ? 'Previewing…' : 'Preview on the chosen devices'}
          </Button>
          {canWrite && (
            <Button
              kind="primary"
              onClick={() => void run('apply')}
              aria-busy={busy === 'apply' || undefined}
            >
              {busy === 'apply' ? 'Applying…' : 'Apply as a task'}
            </Button>
          )}
        </div>
        <ErrorNote error={error} />
      </Section>
      {preview?.map((item) => (
        <DevicePreview
          key={item.deviceId}
          item={item}
          name={props.names.get(item.deviceId) ?? item.deviceId}
        />
      ))}
    </>
  );
}

function DevicePreview(props: { item: PreviewItem; name: string }) {
  const { item } = props;
  const sections = Object.entries(item.preview?.sections ?? {});
  const content = item.content && 'sections' in item.content ? item.content.sections : undefined;
  return (
    <Section
      title={`Preview on ${props.name}`}
      actions={<Badge tone={item.status === 'OK' ? 'ok' : 'bad'}>{item.status}</Badge>}
    >
      <ErrorNote error={item.error?.message} />
      {item.preview && (
        <Table
          caption={`What applying changes on ${props.name}`}
          rows={sections}
          rowKey={([name]) => name}
          empty="Nothing to change."
          columns={[
            { label: 'Section', render: ([name]) => name },
            { label: 'Added', render: ([, s]) => s.added.join(', ') },
            { label: 'Changed', render: ([, s]) => s.changed.join(', ') },
            { label: 'Removed', render: ([, s]) => s.removed.join(', ') },
            { label: 'Restarts', render: ([, s]) => s.restarts.join(', ') },
          ]}
        />
      )}
      {item.content && !content && (
        <p class="muted">
          The configurations are too large to show as a diff here; the table above lists the changes.
        </p>
      )}
      {content &&
        Object.entries(content).map(([name, c]) => (
          <DiffView
            key={name}
            label={`${name} on ${props.name}: current → template`}
            before={jsonLines(c.current)}
            after={jsonLines(c.proposed)}
          />
        ))}
    </Section>
  );
}
