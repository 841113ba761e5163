/** Overview: every module's health, values/s, connected clients, integrations, CPU and memory, the last errors. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { edge, errorText, gql, PATHS, rest } from '../../shared/api.js';
import { fmtBytes, fmtNum, fmtTime, promSum } from '../../shared/format.js';
import { Table } from '../../shared/table.js';
import { Badge, Page, Section, Stat, toneOf, useInterval, useLoad } from '../../shared/ui.js';
import { subscribe } from '../../shared/ws.js';

interface Health {
  module: string;
  ok: boolean;
  detail: string;
}

const PROBES: { module: string; probe: () => Promise<unknown> }[] = [
  {
    module: 'Device hub',
    probe: () => gql(PATHS.devicehub, '{ ListDevices(input: { Limit: 1 }) { Total } }'),
  },
  {
    module: 'Integrations',
    probe: () => gql(PATHS.integrations, '{ ListInstances(input: { Limit: 1 }) { Total } }'),
  },
  { module: 'OPC UA server', probe: () => gql(PATHS.opcua, '{ GetSyncStatus { __typename } }') },
  { module: 'Analytics', probe: () => gql(PATHS.analytics, '{ GetWorkspaces { Total } }') },
  { module: 'Digital twins', probe: () => gql(PATHS.twins, '{ Version { Version } }') },
  { module: 'DataHub', probe: () => rest('GET', '/datahub/v1/stats') },
  { module: 'Configuration', probe: () => rest('GET', '/config/snapshots') },
  { module: 'Logs', probe: () => rest('GET', '/logs/query?limit=1') },
  { module: 'Manager link', probe: () => rest('GET', '/dm/cloud') },
];

interface Metrics {
  CpuPercent: number;
  MemoryRssBytes: number;
  HeapUsedBytes: number;
  UptimeSeconds: number;
}

interface LogEntry {
  timestamp: string;
  level: string;
  component: string;
  message: string;
}

function useRate(): { rate: number | undefined; clients: number | undefined } {
  const last = useRef<{ at: number; count: number } | undefined>(undefined);
  const [state, setState] = useState<{ rate?: number; clients?: number }>({});
  const sample = async () => {
    const res = await edge().request('GET', '/datahub/metrics');
    // No sample of the family yet: nothing was published (a family without samples is 0).
    const count = promSum(res.text, 'millwright_datahub_messages_in_total') ?? 0;
    const clients = promSum(res.text, 'millwright_datahub_connections');
    const now = performance.now();
    const prev = last.current;
    last.current = { at: now, count };
    setState({
      ...(prev ? { rate: ((count - prev.count) * 1000) / (now - prev.at) } : {}),
      ...(clients !== undefined ? { clients } : {}),
    });
  };
  // A first rate one second after the page opens, then every two seconds.
  useEffect(() => {
    void sample().catch(() => undefined);
    const t = setTimeout(() => void sample().catch(() => undefined), 1000);
    return () => clearTimeout(t);
  }, []);
  useInterval(() => void sample().catch(() => undefined), 2000);
  return { rate: state.rate, clients: state.clients };
}

export default function Overview() {
  const [metrics, setMetrics] = useState<Metrics>();
  const { rate, clients } = useRate();
  const health = useLoad<Health[]>(() =>
    Promise.all(
      PROBES.map((p) =>
        p.probe().then(
          () => ({ module: p.module, ok: true, detail: 'answering' }),
          (err: unknown) => ({ module: p.module, ok: false, detail: errorText(err) }),
        ),
      ),
    ),
  );
  const version = useLoad(() =>
    rest<{ version: string; millwright: string; hostname?: string }>('GET', '/dm/host/info'),
  );
  const integrations = useLoad(async () => {
    const r = await gql<{
      ListInstances: { Items: { InstanceID: string; Name: string; ProviderName: string }[] };
    }>(
      PATHS.integrations,
      '{ ListInstances(input: { Limit: 50 }) { Items { InstanceID Name ProviderName } } }',
    );
    return Promise.all(
      r.ListInstances.Items.map(async (i) => {
        const s = await gql<{ GetInstanceStatus: { InstanceState: string } }>(
          PATHS.integrations,
          'query S($input: GetInstanceStatusRequest!) { GetInstanceStatus(input: $input) { InstanceState } }',
          { input: { InstanceID: i.InstanceID } },
        ).catch(() => undefined);
        return { ...i, state: s?.GetInstanceStatus.InstanceState ?? 'unknown' };
      }),
    );
  });
  const errors = useLoad(() => rest<{ entries: LogEntry[] }>('GET', '/logs/query?level=error&limit=8'));
  useInterval(() => {
    integrations.reload();
    errors.reload();
  }, 10_000);
  useEffect(
    () =>
      subscribe<{ SubscribeServerMetrics: Metrics }>(
        PATHS.analytics,
        'subscription M($input: SubscribeServerMetricsRequest) { SubscribeServerMetrics(input: $input) { CpuPercent MemoryRssBytes HeapUsedBytes UptimeSeconds } }',
        { input: { IntervalMs: 2000 } },
        (d) => setMetrics(d.SubscribeServerMetrics),
        () => undefined,
      ),
    [],
  );
  return (
    <Page title="Overview">
      <div class="stats">
        <Stat
          label="Values per second"
          value={rate === undefined ? undefined : fmtNum(rate, 1)}
          pending="Measuring…"
        />
        <Stat label="Connected clients" value={clients === undefined ? undefined : fmtNum(clients)} />
        <Stat label="CPU" value={metrics && `${fmtNum(metrics.CpuPercent, 1)} %`} />
        <Stat label="Memory (RSS)" value={metrics && fmtBytes(metrics.MemoryRssBytes)} />
        <Stat label="Uptime" value={metrics && `${fmtNum(metrics.UptimeSeconds / 60, 1)} min`} />
        <Stat label="Version" value={version.error ? '–' : version.data?.version} />
      </div>
      <div class="grid">
        <Section title="Module health">
          <Table
            caption="Module health"
            rows={health.data ?? []}
            rowKey={(r) => r.module}
            loading={health.loading && !health.data}
            empty="No module."
            columns={[
              { label: 'Module', render: (r) => r.module },
              {
                label: 'Health',
                render: (r) => <Badge tone={r.ok ? 'ok' : 'bad'}>{r.ok ? 'OK' : 'Failing'}</Badge>,
              },
              { label: 'Detail', render: (r) => <span class="muted">{r.detail}</span> },
            ]}
          />
        </Section>
        <Section title="Integration states">
          <Table
            caption="Integration states"
            rows={integrations.data ?? []}
            rowKey={(r) => r.InstanceID}
            loading={integrations.loading && !integrations.data}
            empty="No integration instance."
            columns={[
              { label: 'Instance', render: (r) => r.Name },
              { label: 'Provider', render: (r) => r.ProviderName },
              { label: 'State', render: (r) => <Badge tone={toneOf(r.state)}>{r.state}</Badge> },
            ]}
          />
        </Section>
      </div>
      <Section title="Last errors">
        <Table
          caption="Last errors"
          rows={[...(errors.data?.entries ?? [])].reverse()}
          rowKey={(r) => r.timestamp}
          loading={errors.loading && !errors.data}
          empty="No error logged."
          columns={[
            { label: 'Time', render: (r) => fmtTime(r.timestamp) },
            { label: 'Component', render: (r) => r.component },
            { label: 'Message', render: (r) => r.message },
          ]}
        />
      </Section>
    </Page>
  );
}
