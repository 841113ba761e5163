/**
 * The broker at a glance, read every 2 s: messages per second, connections, queued messages,
 * sessions and topics; its addresses; and how many times each limit was hit since the start.
 */
import { fmtBytes, fmtNum } from '../../shared/format.js';
import { Table } from '../../shared/table.js';
import { ErrorNote, Section, Stat, useInterval, useLoad } from '../../shared/ui.js';
import { gql } from '../api.js';
import { UnsPage } from '../page.js';

interface Overview {
  brokerMetrics: {
    messagesPerSecond: number;
    messagesTotal: number;
    connections: number;
    queuedMessages: number | null;
    queuedBytes: number | null;
    sessions: number;
  };
  broker: {
    topics: number;
    mqttPort: number | null;
    mqttsPort: number | null;
    websocketPath: string;
    protocols: string[];
    refusals: Record<string, number>;
  };
}

const QUERY = `{
  brokerMetrics { messagesPerSecond messagesTotal connections queuedMessages queuedBytes sessions }
  broker { topics mqttPort mqttsPort websocketPath protocols
    refusals { packetTooLarge topicRefused inflightExceeded queueDropped connectThrottled topicsNotRecorded oversizedDropped flowDropped subscriptionsRefused } }
}`;

const REFUSALS: Record<string, string> = {
  packetTooLarge: 'Packets too large (connection closed)',
  topicRefused: 'Topics or filters refused',
  inflightExceeded: 'Connections past the in-flight limit',
  queueDropped: 'Messages dropped from full session queues',
  connectThrottled: 'CONNECTs throttled (failed sign-ins)',
  topicsNotRecorded: 'Topics the tree did not record',
  oversizedDropped: 'Messages over a client’s maximum packet size',
  flowDropped: 'Messages dropped under a Receive Maximum',
  subscriptionsRefused: 'Subscriptions past the limit',
};

export default function OverviewPage() {
  const data = useLoad(() => gql<Overview>(QUERY));
  useInterval(data.reload, 2000);
  const m = data.data?.brokerMetrics;
  const b = data.data?.broker;
  const host = location.hostname;
  return (
    <UnsPage title="Broker">
      <ErrorNote error={data.error} />
      <Section title="Broker metrics">
        <div class="stats">
          <Stat label="Messages per second" value={m && fmtNum(m.messagesPerSecond, 1)} />
          <Stat label="Connections" value={m && fmtNum(m.connections)} />
          <Stat
            label="Queued messages"
            value={m && (m.queuedMessages === null ? 'not counted (Redis)' : fmtNum(m.queuedMessages))}
          />
          <Stat label="Queued bytes" value={m && (m.queuedBytes === null ? '–' : fmtBytes(m.queuedBytes))} />
          <Stat label="Sessions with subscriptions" value={m && fmtNum(m.sessions)} />
          <Stat label="Messages since start" value={m && fmtNum(m.messagesTotal)} />
          <Stat label="Topics" value={b && fmtNum(b.topics)} />
        </div>
      </Section>
      <Section title="Addresses">
        {b ? (
          <ul>
            {b.mqttPort !== null && (
              <li class="mono">
                mqtt://{host}:{b.mqttPort}
              </li>
            )}
            {b.mqttsPort !== null && (
              <li class="mono">
                mqtts://{host}:{b.mqttsPort}
              </li>
            )}
            <li class="mono">
              wss://{location.host}
              {b.websocketPath}
            </li>
            <li>{b.protocols.join(', ')}</li>
          </ul>
        ) : (
          <p class="muted">Loading…</p>
        )}
      </Section>
      <Section title="Limits hit since the start">
        <Table
          caption="Limits hit since the start"
          columns={[
            { label: 'Limit', render: (r: [string, number]) => REFUSALS[r[0]] ?? r[0] },
            { label: 'Times', render: (r: [string, number]) => fmtNum(r[1]), numeric: true },
          ]}
          rows={b ? Object.entries(b.refusals) : []}
          rowKey={(r) => r[0]}
          loading={!b}
        />
      </Section>
    </UnsPage>
  );
}
