/** The Fleet page's top devices of a project, by CPU or memory of their latest heartbeat. */
import { useState } from 'preact/hooks';
import { Field } from '../../shared/form.js';
import { fmtBytes } from '../../shared/format.js';
import { href } from '../../shared/router.js';
import { ListSection } from '../../shared/table.js';
import { useInterval, useLoad } from '../../shared/ui.js';
import { get, type Project } from '../api.js';
import { StateBadge } from './status.js';

interface Top {
  metric: 'cpu' | 'memory';
  items: { deviceId: string; prettyName: string; online: boolean; value: number }[];
}

export function TopDevices(props: { projects: Project[] }) {
  const [choice, setChoice] = useState({ projectId: '', metric: 'cpu' });
  const projectId = choice.projectId || props.projects[0]?.id || '';
  const top = useLoad(
    () =>
      projectId
        ? get<Top>(
            `/api/v1/device/metrics/${encodeURIComponent(projectId)}/top?metric=${choice.metric}&limit=10`,
          )
        : Promise.resolve({ metric: 'cpu', items: [] } as Top),
    [projectId, choice.metric],
  );
  useInterval(() => top.reload(), 5000);
  return (
    <ListSection
      title="Top devices"
      caption={`Top devices by ${choice.metric === 'cpu' ? 'CPU' : 'memory'}`}
      error={top.error}
      loading={top.loading && !top.data}
      rows={top.data?.items ?? []}
      rowKey={(t) => t.deviceId}
      empty="No heartbeat with metrics yet."
      headActions={
        <div class="row">
          <Field
            spec={{
              name: 'top-project',
              label: 'Project of the top list',
              kind: 'select',
              options: props.projects.map((p) => ({ value: p.id, label: `${p.companyName} / ${p.name}` })),
            }}
            value={projectId}
            onInput={(v) => setChoice({ ...choice, projectId: v })}
          />
          <Field
            spec={{
              name: 'top-metric',
              label: 'Ranked by',
              kind: 'select',
              options: [
                { value: 'cpu', label: 'CPU' },
                { value: 'memory', label: 'Memory' },
              ],
            }}
            value={choice.metric}
            onInput={(v) => setChoice({ ...choice, metric: v })}
          />
        </div>
      }
      columns={[
        { label: 'Device', render: (t) => <a href={href(`/devices/${t.deviceId}`)}>{t.prettyName}</a> },
        { label: 'State', render: (t) => <StateBadge online={t.online} /> },
        {
          label: choice.metric === 'cpu' ? 'CPU' : 'Memory',
          numeric: true,
          render: (t) => (choice.metric === 'cpu' ? `${t.value} %` : fmtBytes(t.value)),
        },
      ]}
    />
  );
}
