/**
 * Tasks: every task the caller may read (type, status, progress), and one task's subtasks with
 * their status, read again every second while it runs; a running task can be cancelled, a
 * cancelled one resumed (`TaskProgress`, also shown by the Templates page after an apply).
 */
import { fmtNum, fmtTime } from '../../shared/format.js';
import { href } from '../../shared/router.js';
import { ListSection, Table } from '../../shared/table.js';
import {
  act,
  Button,
  ErrorNote,
  Page,
  Section,
  Stat,
  useCanWrite,
  useInterval,
  useLoad,
} from '../../shared/ui.js';
import { get, mrest, type Page as List, type Device, type Subtask, type Task } from '../api.js';
import { useTitle } from '../session.js';
import { StatusBadge } from './status.js';

export function progress(t: Task): string {
  const done = (t.counts.SUCCEEDED ?? 0) + (t.counts.FAILED ?? 0) + (t.counts.CANCELLED ?? 0);
  return `${fmtNum(done)} of ${fmtNum(t.total)}`;
}

export default function Tasks(props: { parts: string[] }) {
  return props.parts[0] ? <OneTask id={props.parts[0]} /> : <TaskList />;
}

function TaskList() {
  useTitle('Tasks');
  const tasks = useLoad(() => get<List<Task>>('/api/v1/async-task/tasks?limit=100&sort=createdAt:desc'));
  useInterval(() => tasks.reload(), 3000);
  return (
    <Page title="Tasks">
      <ListSection
        title="Tasks"
        caption="Tasks"
        error={tasks.error}
        loading={tasks.loading && !tasks.data}
        rows={tasks.data?.items ?? []}
        rowKey={(t) => t.taskId}
        empty="No task yet: apply a template on the Templates page."
        columns={[
          {
            label: 'Task',
            render: (t) => <a href={href(`/tasks/${t.taskId}`)}>{t.description ?? t.type}</a>,
          },
          { label: 'Type', render: (t) => t.type },
          { label: 'Status', render: (t) => <StatusBadge status={t.status} /> },
          { label: 'Done', render: progress },
          { label: 'Created', render: (t) => fmtTime(t.createdAt) },
          { label: 'By', render: (t) => t.createdBy ?? '' },
        ]}
      />
    </Page>
  );
}

function OneTask(props: { id: string }) {
  const task = useLoad(() => get<Task>(`/api/v1/async-task/${encodeURIComponent(props.id)}`), [props.id]);
  const t = task.data;
  const title = t ? `Task ${t.description ?? t.type}` : 'Task';
  useTitle(title);
  return (
    <Page title={title}>
      <TaskProgress id={props.id} />
    </Page>
  );
}

/**
 * One task as it runs: its figures, a progress bar, every subtask's status (read again every
 * second while the task runs), and Cancel (running) or Resume (cancelled) for a writer.
 */
export function TaskProgress(props: { id: string }) {
  const canWrite = useCanWrite();
  const devices = useLoad(() => get<List<Device>>('/api/v1/device/list?limit=500'));
  const names = new Map((devices.data?.items ?? []).map((d) => [d.id, d.prettyName ?? d.name]));
  const path = `/api/v1/async-task/${encodeURIComponent(props.id)}`;
  const task = useLoad(() => get<Task>(path), [props.id]);
  const subtasks = useLoad(() => get<List<Subtask>>(`${path}/subtasks`), [props.id]);
  const t = task.data;
  const reload = () => {
    task.reload();
    subtasks.reload();
  };
  useInterval(() => {
    if (t && t.status !== 'RUNNING') return;
    reload();
  }, 1000);
  const done = t ? (t.counts.SUCCEEDED ?? 0) + (t.counts.FAILED ?? 0) + (t.counts.CANCELLED ?? 0) : 0;
  const progressId = `task-progress-${props.id}`;
  return (
    <Section
      title="Task progress"
      actions={
        canWrite &&
        t && (
          <>
            {t.status === 'RUNNING' && (
              <Button
                kind="danger"
                onClick={() => void act(() => mrest('POST', `${path}/cancel`), 'Task cancelled', reload)}
              >
                Cancel task
              </Button>
            )}
            {t.status === 'CANCELLED' && (
              <Button
                onClick={() => void act(() => mrest('POST', `${path}/resume`, {}), 'Task resumed', reload)}
              >
                Resume task
              </Button>
            )}
          </>
        )
      }
    >
      <ErrorNote error={task.error} />
      <p class="muted">
        {t?.description ?? ''} <a href={href(`/tasks/${props.id}`)}>Open the task page</a>
      </p>
      <div class="stats" role="group" aria-label="Task figures">
        <Stat label="Status" value={t ? <StatusBadge status={t.status} /> : undefined} />
        <Stat label="Subtasks done" value={t ? progress(t) : undefined} />
        <Stat label="Succeeded" value={t ? fmtNum(t.counts.SUCCEEDED ?? 0) : undefined} />
        <Stat label="Failed" value={t ? fmtNum(t.counts.FAILED ?? 0) : undefined} />
      </div>
      <label for={progressId}>{t ? `${progress(t)} subtasks done` : 'Loading…'}</label>
      <progress id={progressId} class="progress" max={t?.total ?? 1} value={done} />
      <Table
        caption="Subtasks"
        loading={subtasks.loading && !subtasks.data}
        rows={subtasks.data?.items ?? []}
        rowKey={(s) => s.subtaskId}
        columns={[
          {
            label: 'Device',
            render: (s) => <a href={href(`/devices/${s.deviceId}`)}>{names.get(s.deviceId) ?? s.deviceId}</a>,
          },
          { label: 'Status', render: (s) => <StatusBadge status={s.status} /> },
          { label: 'Attempts', numeric: true, render: (s) => fmtNum(s.attempts) },
          { label: 'Finished', render: (s) => fmtTime(s.finishedAt) },
          { label: 'Error', render: (s) => s.error ?? '' },
        ]}
      />
      <ErrorNote error={subtasks.error} />
    </Section>
  );
}
