/**
 * A device of the fleet: its state and latest heartbeat (read again every 3 s), a CPU trend of
 * the heartbeats seen while the page is open (at most 720 points kept in the browser), its
 * connection history, and the subtasks (template applies and other tasks) that reached it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Trend } from '../../shared/chart.js';
import { fmtBytes, fmtNum, fmtTime } from '../../shared/format.js';
import { href } from '../../shared/router.js';
import { ListSection } from '../../shared/table.js';
import { ErrorNote, Page, Section, Stat, useInterval, useLoad } from '../../shared/ui.js';
import { StatusBadge } from './status.js';
import { get, type Device, type Page as List, type Subtask } from '../api.js';
import { useTitle } from '../session.js';
import { deviceName, StateBadge } from './fleet.js';

const MAX_POINTS = 720;

interface Connection {
  id: string;
  connectedAt: string;
  disconnectedAt: string | null;
  remoteAddress: string | null;
  reason: string | null;
}

export default function DevicePage(props: { parts: string[] }) {
  const id = props.parts[0] ?? '';
  const device = useLoad(() => get<Device>(`/api/v1/device/${encodeURIComponent(id)}`), [id]);
  const connections = useLoad(
    () => get<List<Connection>>(`/api/v1/device/${encodeURIComponent(id)}/connections?limit=20`),
    [id],
  );
  const subtasks = useLoad(
    () =>
      get<List<Subtask & { taskId: string; type: string }>>(
        `/api/v1/async-task/subtasks?limit=20&filter=deviceId:eq:${encodeURIComponent(id)}`,
      ),
    [id],
  );
  useInterval(() => {
    device.reload();
    connections.reload();
    subtasks.reload();
  }, 3000);
  const d = device.data;
  useTitle(d ? `Device ${deviceName(d)}` : 'Device');
  const [cpu, setCpu] = useState<[number, number][]>([]);
  const lastBeat = useRef<string | null>(null);
  useEffect(() => {
    if (!d?.lastSeen || d.lastSeen === lastBeat.current || typeof d.metrics?.cpuPercent !== 'number') return;
    lastBeat.current = d.lastSeen;
    const point: [number, number] = [Date.parse(d.lastSeen) / 1000, d.metrics.cpuPercent];
    setCpu((p) => [...p.slice(-(MAX_POINTS - 1)), point]);
  }, [d?.lastSeen]);
  return (
    <Page
      title={d ? `Device ${deviceName(d)}` : 'Device'}
      actions={
        d && (
          <a class="btn" href={`/edge-console/${d.projectId}/${d.id}/`}>
            Open the edge console of {deviceName(d)}
          </a>
        )
      }
    >
      <ErrorNote error={device.error} />
      <div class="stats" role="group" aria-label="Device figures">
        <Stat label="State" value={d ? <StateBadge online={d.online} /> : undefined} />
        <Stat label="Last heartbeat" value={d ? fmtTime(d.lastSeen) : undefined} />
        <Stat label="Edge version" value={d ? (d.edgeVersion ?? '—') : undefined} />
        <Stat
          label="CPU"
          value={d ? (d.metrics?.cpuPercent === undefined ? '—' : `${d.metrics?.cpuPercent} %`) : undefined}
        />
        <Stat label="Memory (RSS)" value={d ? fmtBytes(d.metrics?.memoryBytes) : undefined} />
        <Stat
          label="Uptime"
          value={
            d
              ? d.metrics?.uptimeSeconds === undefined
                ? '—'
                : `${fmtNum(d.metrics?.uptimeSeconds ?? 0)} s`
              : undefined
          }
        />
      </div>
      <Section title="CPU of the heartbeats">
        {cpu.length < 2 ? (
          <p class="muted">
            The trend starts with the next heartbeats (one point a heartbeat while this page is open).
          </p>
        ) : (
          <Trend label={`CPU of ${d ? deviceName(d) : id} (%)`} points={cpu} />
        )}
      </Section>
      <ListSection
        title="Tasks on this device"
        caption="Subtasks of the device"
        error={subtasks.error}
        loading={subtasks.loading && !subtasks.data}
        rows={subtasks.data?.items ?? []}
        rowKey={(s) => s.subtaskId}
        empty="No task has reached this device."
        columns={[
          { label: 'Task', render: (s) => <a href={href(`/tasks/${s.taskId}`)}>{s.type}</a> },
          { label: 'Status', render: (s) => <StatusBadge status={s.status} /> },
          { label: 'Attempts', numeric: true, render: (s) => fmtNum(s.attempts) },
          { label: 'Finished', render: (s) => fmtTime(s.finishedAt) },
          { label: 'Error', render: (s) => s.error ?? '' },
        ]}
      />
      <ListSection
        title="Connection history"
        caption="Connections of the device"
        error={connections.error}
        loading={connections.loading && !connections.data}
        rows={connections.data?.items ?? []}
        rowKey={(c) => c.id}
        columns={[
          { label: 'Connected', render: (c) => fmtTime(c.connectedAt) },
          { label: 'Disconnected', render: (c) => fmtTime(c.disconnectedAt) },
          { label: 'Address', render: (c) => c.remoteAddress ?? '—' },
          { label: 'Reason', render: (c) => c.reason ?? '' },
        ]}
      />
    </Page>
  );
}
