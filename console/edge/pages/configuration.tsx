/**
 * Configuration: templates (create from the current configuration, upload a file, download,
 * delete), a preview of applying one shown as a diff by section, apply with a mode, snapshots and
 * rollback. Uploads go through the typed `EdgeConfigClient` (a session in chunks).
 */
import { useState } from 'preact/hooks';
import { EdgeConfigClient } from '../../../src/client/edge-config.js';
import { edge, errorText, rest } from '../../shared/api.js';
import { Confirm, Field, useConfirm } from '../../shared/form.js';
import { download, fmtBytes, fmtTime } from '../../shared/format.js';
import { ListSection, Table } from '../../shared/table.js';
import { act, Button, ErrorNote, Page, Section, toast, useCanWrite, useLoad } from '../../shared/ui.js';

interface Template {
  id: string;
  name: string;
  description: string;
  sections: string[];
  size: number;
  createdAt: string;
}

interface Snapshot {
  id: string;
  reason: string;
  sections: string[];
  size: number;
  createdAt: string;
}

interface SectionDiff {
  added: string[];
  changed: string[];
  removed: string[];
  restarts: string[];
}

interface Preview {
  mode: string;
  sections: Record<string, SectionDiff>;
  restarts: string[];
  applied?: boolean;
  failed?: { item: string; message: string }[];
  snapshotId?: string;
}

const MODES = [
  { value: 'legacy', label: 'legacy: add and update, keep the rest' },
  { value: 'use', label: 'use: make each section exactly the template' },
  { value: 'merge-apply', label: 'merge-apply: merge into the current' },
];

export default function Configuration() {
  const canWrite = useCanWrite();
  const templates = useLoad(() => rest<{ items: Template[] }>('GET', '/config/templates?limit=200'));
  const snapshots = useLoad(() => rest<{ items: Snapshot[] }>('GET', '/config/snapshots'));
  const [chosen, setChosen] = useState<Template>();
  const [name, setName] = useState('');
  const [file, setFile] = useState<File>();
  const [error, setError] = useState<string>();
  const createFromCurrent = async () => {
    setError(undefined);
    try {
      await rest('POST', '/config/templates', {
        name: name || `current ${new Date().toISOString()}`,
        description: 'created in the console from the current configuration',
      });
      toast('Template created from the current configuration');
      setName('');
      templates.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const upload = async () => {
    if (!file) return;
    setError(undefined);
    try {
      await new EdgeConfigClient(edge()).apply(await file.text(), {
        name: name || file.name,
        saveOnly: true,
        description: `uploaded from ${file.name}`,
      });
      toast(`Template ${name || file.name} uploaded`);
      templates.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const downloadTemplate = (t: Template) =>
    act(async () => {
      const res = await edge().request('GET', `/config/templates/${t.id}/download`);
      download(`${t.name}.json`, res.text, 'application/json');
    });
  const [askRollback, rollbackDialog] = useConfirm<Snapshot>({
    title: 'Roll back the configuration',
    confirmLabel: 'Roll back',
    danger: true,
    body: (s) => (
      <p>Make the configuration what it was at {fmtTime(s.createdAt)}? Changes since then are undone.</p>
    ),
    onConfirm: (s) =>
      void act(
        () => rest('POST', `/config/templates/${s.id}/apply`, {}),
        `Rolled back to the snapshot of ${fmtTime(s.createdAt)}`,
        snapshots.reload,
      ),
  });
  return (
    <Page title="Configuration">
      {canWrite && (
        <Section title="New template">
          <div class="row">
            <div class="field">
              <label for="tpl-name">Template name</label>
              <input id="tpl-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </div>
            <Button kind="primary" onClick={() => void createFromCurrent()}>
              Create from current
            </Button>
            <div class="field">
              <label for="tpl-file">Template file</label>
              <input
                id="tpl-file"
                type="file"
                accept=".json,application/json"
                onChange={(e) => setFile(e.currentTarget.files?.[0])}
              />
            </div>
            <Button disabled={!file} onClick={() => void upload()}>
              Upload template
            </Button>
          </div>
          <ErrorNote error={error} />
        </Section>
      )}
      <ListSection
        title="Templates"
        error={templates.error}
        caption="Templates"
        rows={templates.data?.items ?? []}
        rowKey={(t) => t.id}
        loading={templates.loading && !templates.data}
        empty="No template yet."
        columns={[
          { label: 'Name', render: (t) => t.name },
          { label: 'Sections', render: (t) => t.sections.join(', ') },
          { label: 'Size', render: (t) => fmtBytes(t.size), numeric: true },
          { label: 'Created', render: (t) => fmtTime(t.createdAt) },
        ]}
        actions={(t) => (
          <>
            {/* A preview is a POST: a viewer's would be refused. */}
            {canWrite && (
              <Button class="btn-small" onClick={() => setChosen(t)}>
                Preview {t.name}
              </Button>
            )}
            <Button class="btn-small" onClick={() => void downloadTemplate(t)}>
              Download {t.name}
            </Button>
          </>
        )}
      />
      {chosen && (
        <ApplyPanel
          template={chosen}
          canWrite={canWrite}
          onApplied={snapshots.reload}
          onClose={() => setChosen(undefined)}
        />
      )}
      <ListSection
        title="Snapshots"
        error={snapshots.error}
        caption="Snapshots"
        rows={snapshots.data?.items ?? []}
        rowKey={(s) => s.id}
        loading={snapshots.loading && !snapshots.data}
        empty="No snapshot yet."
        columns={[
          { label: 'Taken', render: (s) => fmtTime(s.createdAt) },
          { label: 'Reason', render: (s) => s.reason },
          { label: 'Sections', render: (s) => s.sections.join(', ') },
        ]}
        actions={
          canWrite
            ? (s) => (
                <Button class="btn-small" onClick={() => askRollback(s)}>
                  Roll back to {fmtTime(s.createdAt)}
                </Button>
              )
            : undefined
        }
      />
      {rollbackDialog}
    </Page>
  );
}

function ApplyPanel(props: {
  template: Template;
  canWrite: boolean;
  onApplied: () => void;
  onClose: () => void;
}) {
  const [mode, setMode] = useState('legacy');
  const [preview, setPreview] = useState<Preview>();
  const [result, setResult] = useState<Preview>();
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string>();
  const run = async (what: 'preview' | 'apply') => {
    setError(undefined);
    try {
      const r = await rest<Preview>('POST', `/config/templates/${props.template.id}/${what}`, { mode });
      if (what === 'preview') {
        setPreview(r);
        setResult(undefined);
      } else {
        setResult(r);
        toast(
          r.applied === false ? 'The template was not applied' : `Template ${props.template.name} applied`,
          r.applied === false ? 'error' : 'ok',
        );
        props.onApplied();
      }
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <Section
      title={`Apply template ${props.template.name}`}
      actions={<Button onClick={props.onClose}>Close the preview</Button>}
    >
      <div class="row">
        <Field
          spec={{ name: 'mode', label: 'Apply mode', kind: 'select', required: true, options: MODES }}
          value={mode}
          onInput={(m) => {
            setMode(m);
            setPreview(undefined);
          }}
        />
        <Button onClick={() => void run('preview')}>Show preview</Button>
        {props.canWrite && (
          <Button kind="primary" disabled={!preview} onClick={() => setAsking(true)}>
            Apply template
          </Button>
        )}
      </div>
      <ErrorNote error={error} />
      {(result ?? preview) && <DiffView preview={(result ?? preview)!} />}
      {result?.failed && result.failed.length > 0 && (
        <Table
          caption="Failed items"
          rows={result.failed}
          rowKey={(f) => f.item}
          columns={[
            { label: 'Item', render: (f) => f.item },
            { label: 'Message', render: (f) => f.message },
          ]}
        />
      )}
      <Confirm
        title="Apply the template"
        open={asking}
        confirmLabel="Apply"
        onConfirm={() => void run('apply')}
        onClose={() => setAsking(false)}
      >
        <p>
          Apply <strong>{props.template.name}</strong> in mode <strong>{mode}</strong>? A snapshot is taken
          first, so it can be rolled back.
        </p>
      </Confirm>
    </Section>
  );
}

function DiffView(props: { preview: Preview }) {
  const entries = Object.entries(props.preview.sections);
  return (
    <div aria-label="Preview by section" role="region">
      {props.preview.applied !== undefined && (
        <p role="status">
          {props.preview.applied ? `Applied (snapshot ${props.preview.snapshotId ?? ''}).` : 'Not applied.'}
        </p>
      )}
      {entries.length === 0 && <p class="muted">No section in this template.</p>}
      {entries.map(([name, d]) => (
        <div key={name}>
          <h3>
            Section {name}: {d.added.length} added, {d.changed.length} changed, {d.removed.length} removed
          </h3>
          {d.added.length + d.changed.length + d.removed.length > 0 ? (
            <pre class="block">
              {d.added.slice(0, 200).map((x) => (
                <div key={`a${x}`} class="diff-add">
                  + {x}
                </div>
              ))}
              {d.changed.slice(0, 200).map((x) => (
                <div key={`c${x}`}>~ {x}</div>
              ))}
              {d.removed.slice(0, 200).map((x) => (
                <div key={`r${x}`} class="diff-del">
                  - {x}
                </div>
              ))}
            </pre>
          ) : (
            <p class="muted">No change.</p>
          )}
          {d.restarts.length > 0 && <p class="muted">Restarts: {d.restarts.join(', ')}</p>}
        </div>
      ))}
    </div>
  );
}
