/** Browse a device's address space (OPC UA, MQTT...) and create tags from a selection of folders. */
import { useEffect, useState } from 'preact/hooks';
import { errorText, gql, PATHS } from '../../shared/api.js';
import { Button, ErrorNote, Section, toast } from '../../shared/ui.js';

interface Item {
  ID: string;
  Path: string;
  Name: string;
  IsFolder: boolean;
  RegisterName: string | null;
  ValueType: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function children(taskId: string, path: string | undefined): Promise<Item[]> {
  const r = await gql<{ ListBrowseTaskItems: { Items: Item[] } }>(
    PATHS.devicehub,
    'query I($input: ListBrowseTaskItemsRequest!) { ListBrowseTaskItems(input: $input) { Items { ID Path Name IsFolder RegisterName ValueType } } }',
    { input: { TaskID: taskId, ...(path ? { Path: path } : {}), Limit: 500 } },
  );
  return r.ListBrowseTaskItems.Items;
}

export function BrowseSection(props: { deviceId: string; onDone: () => void }) {
  const [task, setTask] = useState<{ id: string; count: number }>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const browse = async () => {
    setBusy(true);
    setError(undefined);
    setSelected(new Set());
    try {
      const c = await gql<{ CreateBrowseTask: { ID: string } }>(
        PATHS.devicehub,
        'mutation B($input: CreateBrowseTaskRequest!) { CreateBrowseTask(input: $input) { ID } }',
        {
          input: { DeviceID: props.deviceId },
        },
      );
      for (let i = 0; i < 120; i++) {
        const t = await gql<{ GetBrowseTask: { State: string; Error: string | null; ItemCount: number } }>(
          PATHS.devicehub,
          'query T($ID: ID!) { GetBrowseTask(ID: $ID) { State Error ItemCount } }',
          { ID: c.CreateBrowseTask.ID },
        );
        if (t.GetBrowseTask.State === 'Failed') throw new Error(t.GetBrowseTask.Error ?? 'the browse failed');
        if (t.GetBrowseTask.State === 'Done') {
          setTask({ id: c.CreateBrowseTask.ID, count: t.GetBrowseTask.ItemCount });
          return;
        }
        await sleep(1000);
      }
      throw new Error('the browse did not finish within two minutes');
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const create = async () => {
    if (!task) return;
    setBusy(true);
    try {
      const r = await gql<{
        BrowseTask_CreateRegistersByFoldersSelection: { Created: number; Skipped: number };
      }>(
        PATHS.devicehub,
        'mutation S($input: CreateRegistersByFoldersSelectionRequest!) { BrowseTask_CreateRegistersByFoldersSelection(input: $input) { Created Skipped } }',
        { input: { TaskID: task.id, Folders: [...selected], Recursive: true } },
      );
      const s = r.BrowseTask_CreateRegistersByFoldersSelection;
      toast(`${s.Created} tags created, ${s.Skipped} already there`);
      props.onDone();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const toggle = (path: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(path);
    else next.delete(path);
    setSelected(next);
  };
  return (
    <Section
      title="Browse the device"
      actions={
        <Button onClick={() => void browse()} disabled={busy}>
          {busy && !task ? 'Browsing…' : 'Browse device'}
        </Button>
      }
    >
      <ErrorNote error={error} />
      {task && (
        <>
          <p class="muted">{task.count} items found. Select folders, then create their tags.</p>
          <div class="tree" role="group" aria-label="Address space">
            <Folder taskId={task.id} selected={selected} onToggle={toggle} />
          </div>
          <div class="form-actions">
            <Button kind="primary" disabled={busy || selected.size === 0} onClick={() => void create()}>
              Create tags from the selected folders ({selected.size})
            </Button>
          </div>
        </>
      )}
    </Section>
  );
}

function Folder(props: {
  taskId: string;
  path?: string;
  selected: Set<string>;
  onToggle: (p: string, on: boolean) => void;
}) {
  const [items, setItems] = useState<Item[]>();
  const [open, setOpen] = useState<Record<string, boolean>>({});
  useEffect(
    () => void children(props.taskId, props.path).then(setItems, () => setItems([])),
    [props.taskId, props.path],
  );
  if (!items) return <p class="muted">Loading…</p>;
  return (
    <ul>
      {items.map((it) => (
        <li key={it.ID}>
          {it.IsFolder ? (
            <>
              <button
                type="button"
                class="btn btn-small"
                aria-expanded={!!open[it.Path]}
                onClick={() => setOpen({ ...open, [it.Path]: !open[it.Path] })}
              >
                {open[it.Path] ? '−' : '+'}
                <span class="sr-only">Open {it.Name}</span>
              </button>{' '}
              <input
                type="checkbox"
                id={`sel-${it.ID}`}
                checked={props.selected.has(it.Path)}
                onChange={(e) => props.onToggle(it.Path, e.currentTarget.checked)}
              />{' '}
              <label for={`sel-${it.ID}`}>{it.Name}</label>
              {open[it.Path] && (
                <Folder
                  taskId={props.taskId}
                  path={it.Path}
                  selected={props.selected}
                  onToggle={props.onToggle}
                />
              )}
            </>
          ) : (
            <span>
              {it.Name} <span class="muted">({it.ValueType ?? '?'})</span>
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}
