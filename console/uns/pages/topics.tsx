/**
 * The topic tree with live values: the root's children and those of each expanded topic, read
 * again every 2 s in one GraphQL call. Bounded per browser: 100 children listed per topic and at
 * most 20 topics expanded at once (expanding one more collapses the oldest), so at most 2,100
 * rows; values are the API's first 1 KiB. Retained messages are marked; an administrator
 * publishes a test message (or a retained one, or clears it with an empty retained payload).
 */
import { useState } from 'preact/hooks';
import { initialValues, SchemaForm, type FieldSpec } from '../../shared/form.js';
import { fmtNum, fmtTime } from '../../shared/format.js';
import { Table } from '../../shared/table.js';
import { Badge, ErrorNote, Section, toast, useCanWrite, useInterval, useLoad } from '../../shared/ui.js';
import { gql } from '../api.js';
import { UnsPage } from '../page.js';
import '../uns.css';

/** Children listed per topic, and topics expanded at once (the bounds of docs/security.md). */
export const CHILDREN_PER_TOPIC = 100;
export const MAX_EXPANDED = 20;

interface TopicRow {
  path: string;
  name: string;
  retained: boolean;
  seen: boolean;
  lastValue: string | null;
  lastPublish: string | null;
  messageRate: number;
  childCount: number;
}

interface TopicPage {
  total: number;
  items: TopicRow[];
}

const FIELDS = 'path name retained seen lastValue lastPublish messageRate childCount';

/** One call for the root and every expanded topic (aliases `t0`, `t1`...). */
function loadTree(expanded: string[]): Promise<Record<string, TopicPage>> {
  const parents = ['', ...expanded];
  const vars = parents.map((_, i) => `$p${i}: String!`).join(', ');
  const body = parents
    .map(
      (_, i) => `t${i}: topics(parent: $p${i}, limit: ${CHILDREN_PER_TOPIC}) { total items { ${FIELDS} } }`,
    )
    .join('\n');
  const variables = Object.fromEntries(parents.map((p, i) => [`p${i}`, p]));
  return gql<Record<string, TopicPage>>(`query(${vars}) { ${body} }`, variables).then((data) =>
    Object.fromEntries(parents.map((p, i) => [p, data[`t${i}`]!])),
  );
}

interface Flat {
  row: TopicRow;
  depth: number;
}

function flatten(tree: Record<string, TopicPage>, parent: string, depth: number, out: Flat[]): Flat[] {
  for (const row of tree[parent]?.items ?? []) {
    out.push({ row, depth });
    if (tree[row.path]) flatten(tree, row.path, depth + 1, out);
  }
  return out;
}

export default function TopicsPage() {
  const [expanded, setExpanded] = useState<string[]>([]);
  const tree = useLoad(() => loadTree(expanded), [expanded.join('\n')]);
  useInterval(tree.reload, 2000);
  const toggle = (path: string) =>
    setExpanded((cur) =>
      cur.includes(path)
        ? cur.filter((p) => p !== path && !p.startsWith(`${path}/`))
        : [...cur, path].slice(-MAX_EXPANDED),
    );
  const rows = tree.data ? flatten(tree.data, '', 0, []) : [];
  const rootTotal = tree.data?.['']?.total ?? 0;
  const cut = Object.entries(tree.data ?? {}).filter(([, p]) => p.total > p.items.length);
  return (
    <UnsPage title="Topic tree">
      <Section title="Topics">
        <ErrorNote error={tree.error} />
        <p class="muted">
          Live: read every 2 s. Top-level topics: {fmtNum(rootTotal)}. {CHILDREN_PER_TOPIC} children are
          listed per topic and {MAX_EXPANDED} topics stay expanded at most.
        </p>
        <Table
          caption="Topic tree"
          columns={[
            {
              label: 'Topic',
              render: ({ row, depth }: Flat) => (
                <span class={`tree-name depth-${Math.min(depth, 6)}`}>
                  {row.childCount > 0 ? (
                    <button
                      type="button"
                      class="btn btn-small tree-toggle"
                      aria-expanded={expanded.includes(row.path)}
                      aria-label={`${expanded.includes(row.path) ? 'Collapse' : 'Expand'} ${row.path}`}
                      onClick={() => toggle(row.path)}
                    >
                      {expanded.includes(row.path) ? '−' : '+'}
                    </button>
                  ) : (
                    <span class="tree-toggle" aria-hidden="true" />
                  )}
                  <span class="mono" title={row.path}>
                    {row.name}
                  </span>
                </span>
              ),
            },
            {
              label: 'Value',
              render: ({ row }: Flat) =>
                row.lastValue === null ? (
                  <span class="muted">–</span>
                ) : (
                  <span class="mono tree-value" aria-label={`Value of ${row.path}`}>
                    {row.lastValue}
                  </span>
                ),
            },
            {
              label: 'Retained',
              render: ({ row }: Flat) => (row.retained ? <Badge tone="ok">retained</Badge> : ''),
            },
            { label: 'Msg/s', numeric: true, render: ({ row }: Flat) => fmtNum(row.messageRate, 1) },
            { label: 'Last message', render: ({ row }: Flat) => fmtTime(row.lastPublish) },
            { label: 'Children', numeric: true, render: ({ row }: Flat) => fmtNum(row.childCount) },
          ]}
          rows={rows}
          rowKey={(f) => f.row.path}
          loading={tree.loading && !tree.data}
          empty="No topic yet: publish a message."
        />
        {cut.length > 0 && (
          <ul class="muted">
            {cut.map(([path, p]) => (
              <li key={path}>
                {path === '' ? 'Top level' : <span class="mono">{path}</span>}: the first{' '}
                {fmtNum(p.items.length)} of {fmtNum(p.total)} children are listed.
              </li>
            ))}
          </ul>
        )}
      </Section>
      {useCanWrite() && <PublishSection onPublished={tree.reload} />}
    </UnsPage>
  );
}

const PUBLISH_FIELDS: FieldSpec[] = [
  { name: 'topic', label: 'Topic', kind: 'text', required: true, description: 'No wildcard (+, #).' },
  { name: 'payload', label: 'Payload', kind: 'textarea', description: 'UTF-8 text.' },
  {
    name: 'qos',
    label: 'QoS',
    kind: 'select',
    default: '0',
    options: ['0', '1', '2'].map((v) => ({ value: v, label: v })),
  },
  {
    name: 'retain',
    label: 'Retain',
    kind: 'boolean',
    description: 'Kept for new subscribers; an empty retained payload clears it.',
  },
];

function PublishSection(props: { onPublished: () => void }) {
  const [values, setValues] = useState(initialValues(PUBLISH_FIELDS));
  return (
    <Section title="Publish a test message">
      <SchemaForm
        label="Publish a test message"
        fields={PUBLISH_FIELDS}
        values={values}
        onChange={setValues}
        submitLabel="Publish message"
        onSubmit={async (v) => {
          const r = await gql<{ publishMessage: { bytes: number; topic: string } }>(
            'mutation($r: PublishMessageRequest!) { publishMessage(request: $r) { topic bytes } }',
            {
              r: {
                topic: v.topic,
                payload: v.payload ?? '',
                qos: Number(v.qos),
                retain: v.retain === 'true',
              },
            },
          );
          toast(`Published ${r.publishMessage.bytes} bytes to ${r.publishMessage.topic}`);
          props.onPublished();
        }}
      />
    </Section>
  );
}
