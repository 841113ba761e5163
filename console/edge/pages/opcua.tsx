/** OPC UA server: settings, the address-space tree, and the sync status live (`SubscribeSyncStatus`). */
import { useEffect, useState } from 'preact/hooks';
import { gql, PATHS } from '../../shared/api.js';
import { initialValues, SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import {
  Badge,
  Button,
  ErrorNote,
  Page,
  Section,
  Stat,
  toast,
  toastError,
  toneOf,
  useCanWrite,
  useLoad,
} from '../../shared/ui.js';
import { subscribe } from '../../shared/ws.js';

const P = PATHS.opcua;

interface Settings {
  Enabled: boolean;
  EndpointUrl: string | null;
  Port: number | null;
  AllowAnonymous: boolean;
  MaxSessions: number;
  AutoSync: boolean;
  AutoAcceptUntrusted: boolean;
  PendingRestart: string[];
}

interface SyncRun {
  ID: string;
  State: string;
  Trigger: string;
  StartTime: number;
  EndTime: number | null;
  Added: number;
  Removed: number;
  Modified: number;
  Error: string | null;
}

interface SyncStatus {
  AutoSync: boolean;
  Running: boolean;
  LastSync: SyncRun | null;
  Nodes: { Local: number; Synced: number; Pending: number; Orphaned: number; Failed: number };
}

interface Node {
  Ref: string;
  Name: string;
  Kind: string;
  NodeID: string;
  ValueType: string | null;
  SyncState: string;
  HasChildren: boolean;
}

const RUN = 'ID State Trigger StartTime EndTime Added Removed Modified Error';
const SETTINGS =
  'Enabled EndpointUrl Port AllowAnonymous MaxSessions AutoSync AutoAcceptUntrusted PendingRestart';
const FIELDS: FieldSpec[] = [
  { name: 'AllowAnonymous', label: 'Allow anonymous clients', kind: 'boolean' },
  { name: 'MaxSessions', label: 'Maximum sessions', kind: 'number', min: 1 },
  { name: 'AutoSync', label: 'Sync the device hub automatically', kind: 'boolean' },
  { name: 'AutoAcceptUntrusted', label: 'Accept untrusted client certificates', kind: 'boolean' },
];

export default function Opcua() {
  const canWrite = useCanWrite();
  const settings = useLoad(() =>
    gql<{ GetServerSettings: Settings }>(P, `{ GetServerSettings { ${SETTINGS} } }`),
  );
  const sync = useLoad(() =>
    gql<{ GetSyncStatus: SyncStatus }>(
      P,
      `{ GetSyncStatus { AutoSync Running LastSync { ${RUN} } Nodes { Local Synced Pending Orphaned Failed } } }`,
    ),
  );
  const [lastRun, setLastRun] = useState<SyncRun>();
  const [values, setValues] = useState<FormValues>({});
  useEffect(() => {
    const s = settings.data?.GetServerSettings;
    if (s)
      setValues(
        initialValues(FIELDS, {
          AllowAnonymous: String(s.AllowAnonymous),
          MaxSessions: String(s.MaxSessions),
          AutoSync: String(s.AutoSync),
          AutoAcceptUntrusted: String(s.AutoAcceptUntrusted),
        }),
      );
  }, [settings.data]);
  useEffect(
    () =>
      subscribe<{ SubscribeSyncStatus: SyncRun }>(
        P,
        `subscription { SubscribeSyncStatus { ${RUN} } }`,
        undefined,
        (d) => {
          setLastRun(d.SubscribeSyncStatus);
          sync.reload();
        },
        () => undefined,
      ),
    [],
  );
  const save = async (v: FormValues) => {
    const r = await gql<{ UpdateServerSettings: { RestartRequired: boolean } }>(
      P,
      'mutation U($input: UpdateServerSettingsRequest!) { UpdateServerSettings(input: $input) { RestartRequired } }',
      {
        input: {
          AllowAnonymous: v.AllowAnonymous === 'true',
          MaxSessions: Number(v.MaxSessions),
          AutoSync: v.AutoSync === 'true',
          AutoAcceptUntrusted: v.AutoAcceptUntrusted === 'true',
        },
      },
    );
    toast(
      r.UpdateServerSettings.RestartRequired
        ? 'Settings saved; some wait for a restart of the edge'
        : 'Settings saved',
    );
    settings.reload();
  };
  const runSync = async () => {
    try {
      await gql(P, `mutation { SyncNodes { ${RUN} } }`);
      toast('Sync started');
      sync.reload();
    } catch (err) {
      toastError(err);
    }
  };
  const s = settings.data?.GetServerSettings;
  const st = sync.data?.GetSyncStatus;
  // The live status, unless the status read since is of the same run and further on (a
  // subscription that dropped, or an update it missed, must not leave "Running" on screen).
  const read = st?.LastSync ?? undefined;
  const run =
    lastRun && read && read.ID === lastRun.ID && lastRun.State === 'Running' && read.State !== 'Running'
      ? read
      : (lastRun ?? read);
  const running = st?.Running === true || run?.State === 'Running';
  // While a sync runs, the status is read again every 2 s besides the live updates.
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => sync.reload(), 2000);
    return () => clearInterval(timer);
  }, [running]);
  return (
    <Page title="OPC UA server">
      <div class="stats">
        <Stat
          label="Server"
          value={
            s ? <Badge tone={s.Enabled ? 'ok' : 'warn'}>{s.Enabled ? 'enabled' : 'disabled'}</Badge> : '–'
          }
        />
        <Stat label="Endpoint" value={<span class="mono">{s?.EndpointUrl ?? '–'}</span>} />
        <Stat label="Synced nodes" value={st?.Nodes.Synced ?? '–'} />
        <Stat label="Pending nodes" value={st?.Nodes.Pending ?? '–'} />
        <Stat label="Failed nodes" value={st?.Nodes.Failed ?? '–'} />
      </div>
      <Section
        title="Sync status"
        actions={canWrite && <Button onClick={() => void runSync()}>Sync now</Button>}
      >
        <ErrorNote error={sync.error} />
        {run ? (
          <p aria-live="polite">
            Last sync <Badge tone={toneOf(run.State)}>{run.State}</Badge> ({run.Trigger}), started{' '}
            {fmtTime(new Date(run.StartTime).toISOString())}: {run.Added} added, {run.Modified} modified,{' '}
            {run.Removed} removed{run.Error ? `; ${run.Error}` : ''}.
          </p>
        ) : (
          <p class="muted">No sync yet.</p>
        )}
      </Section>
      <Section title="Address space">
        <div class="tree" role="region" aria-label="OPC UA address space">
          {/* Loaded again when a sync ends: the nodes it added or removed. */}
          <NodeList key={`${run?.ID}:${run?.State}:${st?.Nodes.Synced}`} />
        </div>
      </Section>
      <Section title="Server settings">
        <ErrorNote error={settings.error} />
        {s && s.PendingRestart.length > 0 && (
          <p class="muted">Waiting for a restart: {s.PendingRestart.join(', ')}</p>
        )}
        {s &&
          (canWrite ? (
            <SchemaForm
              label="OPC UA server settings"
              fields={FIELDS}
              values={values}
              onChange={setValues}
              onSubmit={save}
              submitLabel="Save settings"
            />
          ) : (
            <pre class="block">{JSON.stringify(s, null, 2)}</pre>
          ))}
      </Section>
    </Page>
  );
}

/** One level of the address space: its folders and devices (which open), then its tags. */
function NodeList(props: { parent?: string }) {
  const NODE = 'Total Items { Ref Name Kind NodeID ValueType SyncState HasChildren }';
  const nodes = useLoad(async () => {
    const input = { ...(props.parent ? { ParentRef: props.parent } : {}), Limit: 200 };
    const r = await gql<{
      Folders: { Items: Node[]; Total: number };
      Tags: { Items: Node[]; Total: number };
    }>(
      P,
      `query F($folders: GetChildFoldersPageRequest, $tags: GetFolderItemsRequest) { Folders: GetChildFoldersPage(input: $folders) { ${NODE} } Tags: GetFolderItems(input: $tags) { ${NODE} } }`,
      { folders: input, tags: input },
    );
    return {
      items: [...r.Folders.Items, ...r.Tags.Items],
      total: r.Folders.Total + r.Tags.Total,
    };
  }, [props.parent]);
  const [open, setOpen] = useState<Record<string, boolean>>({});
  if (nodes.error) return <ErrorNote error={nodes.error} />;
  if (!nodes.data) return <p class="muted">Loading…</p>;
  const { items, total } = nodes.data;
  if (items.length === 0) return <p class="muted">Empty.</p>;
  return (
    <ul>
      {items.map((n) => (
        <li key={n.Ref}>
          {n.HasChildren ? (
            <button
              type="button"
              class="btn btn-small"
              aria-expanded={!!open[n.Ref]}
              onClick={() => setOpen({ ...open, [n.Ref]: !open[n.Ref] })}
            >
              {open[n.Ref] ? '−' : '+'} {n.Name}
            </button>
          ) : (
            <span>{n.Name}</span>
          )}{' '}
          <span class="muted mono">{n.NodeID}</span> {n.ValueType && <span class="muted">{n.ValueType}</span>}{' '}
          <Badge tone={toneOf(n.SyncState)}>{n.SyncState}</Badge>
          {open[n.Ref] && <NodeList parent={n.Ref} />}
        </li>
      ))}
      {total > items.length && (
        <li class="muted">
          The first {items.length} of {total} nodes.
        </li>
      )}
    </ul>
  );
}
