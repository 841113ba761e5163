/**
 * The connected MQTT clients (`connections`, read every 2 s, 50 a page): account, protocol, peer,
 * session (clean or persistent, MQTT 5 expiry), subscriptions and queued messages; an
 * administrator disconnects one (`disconnectClient`, after a confirmation).
 */
import { useState } from 'preact/hooks';
import { SearchField, useConfirm } from '../../shared/form.js';
import { fmtNum } from '../../shared/format.js';
import { ListSection, Pager } from '../../shared/table.js';
import { act, Badge, Button, useCanWrite, useInterval, useLoad } from '../../shared/ui.js';
import { gql } from '../api.js';
import { UnsPage } from '../page.js';
import '../uns.css';

interface Connection {
  clientId: string;
  username: string | null;
  protoLevel: number;
  remote: string;
  cleanSession: boolean;
  sessionExpiry: number | null;
  keepalive: number;
  subscriptions: { topic: string; qos: number }[];
  subscriptionCount: number;
  queued: number | null;
}

const LIMIT = 50;
const PROTOCOLS: Record<number, string> = { 3: 'MQTT 3.1', 4: 'MQTT 3.1.1', 5: 'MQTT 5' };

function session(c: Connection): string {
  if (c.cleanSession && !c.sessionExpiry) return 'clean';
  if (c.sessionExpiry === null) return 'persistent';
  return c.sessionExpiry >= 0xffffffff
    ? 'persistent (never expires)'
    : `persistent (${fmtNum(c.sessionExpiry)} s)`;
}

export default function ClientsPage() {
  const canWrite = useCanWrite();
  const [filter, setFilter] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(
    () =>
      gql<{ connections: { total: number; items: Connection[] } }>(
        `query($r: ConnectionsRequest) { connections(request: $r) { total items { clientId username protoLevel remote cleanSession sessionExpiry keepalive subscriptions { topic qos } subscriptionCount queued } } }`,
        { r: { offset, limit: LIMIT, filter: filter || null } },
      ).then((d) => d.connections),
    [offset, filter],
  );
  useInterval(list.reload, 2000);
  const [askDisconnect, dialog] = useConfirm<Connection>({
    title: 'Disconnect client',
    confirmLabel: 'Disconnect',
    danger: true,
    body: (c) => (
      <p>
        Close the connection of <strong>{c.clientId}</strong>? It may connect again; a persistent session
        stays.
      </p>
    ),
    onConfirm: (c) =>
      void act(
        () =>
          gql('mutation($r: DisconnectClientRequest!) { disconnectClient(request: $r) }', {
            r: { clientId: c.clientId },
          }),
        `Disconnected ${c.clientId}`,
        list.reload,
      ),
  });
  return (
    <UnsPage title="Connected clients">
      <ListSection
        title="Clients"
        error={list.error}
        caption="Connected clients"
        loading={list.loading && !list.data}
        headActions={
          <SearchField
            id="client-search"
            label="Search clients"
            value={filter}
            onSearch={(v) => {
              setFilter(v);
              setOffset(0);
            }}
          />
        }
        columns={[
          { label: 'Client ID', render: (c: Connection) => <span class="mono">{c.clientId}</span> },
          { label: 'Account', render: (c: Connection) => c.username ?? '–' },
          { label: 'Protocol', render: (c: Connection) => PROTOCOLS[c.protoLevel] ?? String(c.protoLevel) },
          { label: 'Remote', render: (c: Connection) => c.remote },
          {
            label: 'Session',
            render: (c: Connection) => <Badge tone={c.cleanSession ? 'info' : 'ok'}>{session(c)}</Badge>,
          },
          {
            label: 'Subscriptions',
            render: (c: Connection) =>
              c.subscriptionCount === 0 ? (
                <span class="muted">none</span>
              ) : (
                <ul class="sub-list">
                  {c.subscriptions.map((s) => (
                    <li key={s.topic} class="mono">
                      {s.topic} (QoS {s.qos})
                    </li>
                  ))}
                  {c.subscriptionCount > c.subscriptions.length && (
                    <li>and {c.subscriptionCount - c.subscriptions.length} more</li>
                  )}
                </ul>
              ),
          },
          {
            label: 'Queued',
            numeric: true,
            render: (c: Connection) => (c.queued === null ? '–' : fmtNum(c.queued)),
          },
        ]}
        rows={list.data?.items ?? []}
        rowKey={(c) => c.clientId}
        empty="No client is connected."
        actions={
          canWrite
            ? (c: Connection) => (
                <Button class="btn-small" kind="danger" onClick={() => askDisconnect(c)}>
                  Disconnect <span class="sr-only">{c.clientId}</span>
                </Button>
              )
            : undefined
        }
      >
        <Pager
          label="Client pages"
          offset={offset}
          limit={LIMIT}
          total={list.data?.total ?? 0}
          onOffset={setOffset}
        />
      </ListSection>
      {dialog}
    </UnsPage>
  );
}
