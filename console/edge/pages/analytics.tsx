/**
 * Analytics: workspaces, a graph of a workspace's processors at their saved positions (drag a
 * node, then Save positions), and the script editor with Validate and Test.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText, gql, PATHS } from '../../shared/api.js';
import { Field } from '../../shared/form.js';
import { Table } from '../../shared/table.js';
import {
  Badge,
  Button,
  ErrorNote,
  Page,
  Section,
  toast,
  toastError,
  toneOf,
  useCanWrite,
  useLoad,
} from '../../shared/ui.js';

const P = PATHS.analytics;

interface Workspace {
  ID: string;
  Name: string;
  Description: string;
}

interface Processor {
  ID: string;
  Name: string;
  Kind: string;
  Parameters: { inputs?: { processor?: string; subject?: string }[]; script?: string } & Record<
    string,
    unknown
  >;
  Position: { X: number; Y: number };
  State: string;
  MessagesIn: number;
  MessagesOut: number;
}

export default function Analytics() {
  const canWrite = useCanWrite();
  const workspaces = useLoad(() =>
    gql<{ GetWorkspaces: { Items: Workspace[] } }>(
      P,
      '{ GetWorkspaces(input: { Limit: 200 }) { Items { ID Name Description } } }',
    ),
  );
  const [chosen, setChosen] = useState<string>();
  const [name, setName] = useState('');
  const [script, setScript] = useState<{ processor?: Processor; text: string }>({
    text: 'function onMessage(message, parameters, variables) {\n  return message.value * 2;\n}\n',
  });
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const r = await gql<{ CreateWorkspace: { ID: string } }>(
        P,
        'mutation C($input: CreateWorkspaceRequest!) { CreateWorkspace(input: $input) { ID } }',
        { input: { Name: name } },
      );
      setName('');
      workspaces.reload();
      setChosen(r.CreateWorkspace.ID);
    } catch (err) {
      toastError(err);
    }
  };
  const items = workspaces.data?.GetWorkspaces.Items ?? [];
  useEffect(() => {
    if (!chosen && items[0]) setChosen(items[0].ID);
  }, [items.length]);
  return (
    <Page title="Analytics">
      <Section title="Workspaces">
        <ErrorNote error={workspaces.error} />
        <div class="row">
          <div class="field">
            <label for="ws-choose">Workspace</label>
            <select id="ws-choose" value={chosen ?? ''} onChange={(e) => setChosen(e.currentTarget.value)}>
              {items.length === 0 && <option value="">No workspace yet</option>}
              {items.map((w) => (
                <option key={w.ID} value={w.ID}>
                  {w.Name}
                </option>
              ))}
            </select>
          </div>
          {canWrite && (
            <form class="row" aria-label="New workspace" onSubmit={create}>
              <Field
                spec={{ name: 'wsName', label: 'New workspace name', kind: 'text', required: true }}
                value={name}
                onInput={setName}
              />
              <button type="submit" class="btn">
                Create workspace
              </button>
            </form>
          )}
        </div>
      </Section>
      {chosen && (
        <Graph
          workspaceId={chosen}
          onScript={(p) => setScript({ processor: p, text: String(p.Parameters.script ?? '') })}
        />
      )}
      <ScriptEditor
        processor={script.processor}
        text={script.text}
        onText={(text) => setScript({ ...script, text })}
      />
    </Page>
  );
}

const W = 150;
const H = 44;

function Graph(props: { workspaceId: string; onScript: (p: Processor) => void }) {
  const canWrite = useCanWrite();
  const list = useLoad(
    () =>
      gql<{ GetWorkspaceProcessors: { Items: Processor[] } }>(
        P,
        'query G($input: GetWorkspaceProcessorsRequest!) { GetWorkspaceProcessors(input: $input) { Items { ID Name Kind Parameters Position { X Y } State MessagesIn MessagesOut } } }',
        { input: { WorkspaceID: props.workspaceId, Limit: 500 } },
      ),
    [props.workspaceId],
  );
  const [pos, setPos] = useState<Record<string, { X: number; Y: number }>>({});
  const [dirty, setDirty] = useState(false);
  const drag = useRef<{ id: string; dx: number; dy: number } | undefined>(undefined);
  const svg = useRef<SVGSVGElement>(null);
  const items = list.data?.GetWorkspaceProcessors.Items ?? [];
  useEffect(() => {
    setPos(Object.fromEntries(items.map((p) => [p.ID, p.Position])));
    setDirty(false);
  }, [list.data]);
  const at = (id: string) => pos[id] ?? { X: 0, Y: 0 };
  const point = (e: PointerEvent) => {
    const r = svg.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };
  const save = async () => {
    try {
      await gql(
        P,
        'mutation S($input: SetProcessorInstancesPositionMapRequest!) { SetProcessorInstancesPositionMap(input: $input) { ID } }',
        {
          input: {
            Positions: Object.entries(pos).map(([ID, p]) => ({ ID, X: Math.round(p.X), Y: Math.round(p.Y) })),
          },
        },
      );
      toast('Positions saved');
      setDirty(false);
    } catch (err) {
      toastError(err);
    }
  };
  const byKey = new Map(items.flatMap((p) => [[p.ID, p] as const, [p.Name, p] as const]));
  const edges = items.flatMap((p) =>
    (p.Parameters.inputs ?? [])
      .filter((i) => i.processor && byKey.has(i.processor))
      .map((i) => [byKey.get(i.processor!)!.ID, p.ID] as const),
  );
  const width = Math.max(600, ...items.map((p) => at(p.ID).X + W + 20));
  const height = Math.max(300, ...items.map((p) => at(p.ID).Y + H + 20));
  return (
    <Section
      title="Processors"
      actions={
        canWrite && (
          <Button disabled={!dirty} onClick={() => void save()}>
            Save positions
          </Button>
        )
      }
    >
      <ErrorNote error={list.error} />
      {/* A canvas wider than a phone: it scrolls (with the keyboard too, once focused). */}
      <div class="graph" tabIndex={0} role="region" aria-label="Processor graph" data-scrolls="both">
        <svg
          ref={svg}
          width={width}
          height={height}
          role="img"
          aria-label={`Graph of ${items.length} processors`}
          onPointerMove={(e) => {
            if (!drag.current) return;
            const p = point(e);
            setPos({
              ...pos,
              [drag.current.id]: {
                X: Math.max(0, p.x - drag.current.dx),
                Y: Math.max(0, p.y - drag.current.dy),
              },
            });
            setDirty(true);
          }}
          onPointerUp={() => (drag.current = undefined)}
          onPointerLeave={() => (drag.current = undefined)}
        >
          {edges.map(([from, to]) => (
            <line
              key={`${from}-${to}`}
              x1={at(from).X + W}
              y1={at(from).Y + H / 2}
              x2={at(to).X}
              y2={at(to).Y + H / 2}
              stroke="#4a5561"
              stroke-width="2"
            />
          ))}
          {items.map((p) => (
            <g
              key={p.ID}
              onPointerDown={(e) => {
                if (!canWrite) return;
                const pt = point(e);
                drag.current = { id: p.ID, dx: pt.x - at(p.ID).X, dy: pt.y - at(p.ID).Y };
              }}
            >
              <rect
                x={at(p.ID).X}
                y={at(p.ID).Y}
                width={W}
                height={H}
                rx="6"
                fill="#ffffff"
                stroke="#1d5fbf"
                stroke-width="2"
              />
              <text x={at(p.ID).X + 8} y={at(p.ID).Y + 18} font-size="13" fill="#15191e">
                {p.Name.slice(0, 20)}
              </text>
              <text x={at(p.ID).X + 8} y={at(p.ID).Y + 35} font-size="11" fill="#4a5561">
                {p.Kind}
              </text>
            </g>
          ))}
        </svg>
      </div>
      <Table
        caption="Processors"
        rows={items}
        rowKey={(p) => p.ID}
        empty="No processor in this workspace."
        columns={[
          { label: 'Processor', render: (p) => p.Name },
          { label: 'Kind', render: (p) => p.Kind },
          { label: 'State', render: (p) => <Badge tone={toneOf(p.State)}>{p.State}</Badge> },
          { label: 'In', render: (p) => p.MessagesIn, numeric: true },
          { label: 'Out', render: (p) => p.MessagesOut, numeric: true },
          { label: 'Position', render: (p) => `${Math.round(at(p.ID).X)}, ${Math.round(at(p.ID).Y)}` },
          {
            label: 'Actions',
            render: (p) =>
              p.Kind === 'script' && (
                <Button class="btn-small" onClick={() => props.onScript(p)}>
                  Edit script of {p.Name}
                </Button>
              ),
          },
        ]}
      />
    </Section>
  );
}

interface TestResult {
  Outputs: unknown[];
  Console: string[];
  Error: string | null;
  Failure: string | null;
  DurationMs: number;
}

function ScriptEditor(props: {
  processor?: Processor | undefined;
  text: string;
  onText: (t: string) => void;
}) {
  const canWrite = useCanWrite();
  const [message, setMessage] = useState('{ "value": 21 }');
  const [validation, setValidation] = useState<{
    Valid: boolean;
    Errors: { Message: string; Line: number; Column: number }[];
  }>();
  const [test, setTest] = useState<TestResult>();
  const [error, setError] = useState<string>();
  const validate = async () => {
    setError(undefined);
    try {
      const r = await gql<{ ValidateProcessorScript: NonNullable<typeof validation> }>(
        P,
        'query V($input: ValidateProcessorScriptRequest!) { ValidateProcessorScript(input: $input) { Valid Errors { Message Line Column } } }',
        { input: { Script: props.text } },
      );
      setValidation(r.ValidateProcessorScript);
    } catch (err) {
      setError(errorText(err));
    }
  };
  const runTest = async () => {
    setError(undefined);
    try {
      const parsed: unknown = JSON.parse(message);
      const r = await gql<{ TestProcessorScript: TestResult }>(
        P,
        'mutation T($input: TestProcessorScriptRequest!) { TestProcessorScript(input: $input) { Outputs Console Error Failure DurationMs } }',
        { input: { Script: props.text, Messages: [parsed] } },
      );
      setTest(r.TestProcessorScript);
    } catch (err) {
      setError(errorText(err));
    }
  };
  const save = async () => {
    if (!props.processor) return;
    try {
      await gql(
        P,
        'mutation U($input: UpdateProcessorInstanceRequest!) { UpdateProcessorInstance(input: $input) { ID } }',
        {
          input: {
            ID: props.processor.ID,
            Parameters: { ...props.processor.Parameters, script: props.text },
          },
        },
      );
      toast(`Script of ${props.processor.Name} saved`);
    } catch (err) {
      toastError(err);
    }
  };
  return (
    <Section title={props.processor ? `Script of ${props.processor.Name}` : 'Script editor'}>
      <div class="split">
        <div class="field">
          <label for="script-text">Script</label>
          <textarea
            id="script-text"
            class="code"
            spellcheck={false}
            value={props.text}
            onInput={(e) => props.onText(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="script-message">Test message (JSON)</label>
          <textarea
            id="script-message"
            class="code"
            spellcheck={false}
            value={message}
            onInput={(e) => setMessage(e.currentTarget.value)}
          />
        </div>
      </div>
      <div class="form-actions">
        <Button onClick={() => void validate()}>Validate</Button>
        {/* TestProcessorScript is a mutation: a viewer's would be refused. */}
        {canWrite && (
          <Button kind="primary" onClick={() => void runTest()}>
            Test
          </Button>
        )}
        {canWrite && props.processor && <Button onClick={() => void save()}>Save script</Button>}
      </div>
      <ErrorNote error={error} />
      {validation && (
        <div role="status">
          {validation.Valid ? (
            <p>
              <Badge tone="ok">Valid</Badge> The script compiles.
            </p>
          ) : (
            <ul class="error-note">
              {validation.Errors.map((e) => (
                <li key={`${e.Line}:${e.Column}`}>
                  Line {e.Line}, column {e.Column}: {e.Message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {test && (
        <div role="status" aria-label="Test result">
          <p>
            Test ran in {test.DurationMs.toFixed(1)} ms
            {test.Error || test.Failure ? `: ${test.Error ?? test.Failure}` : ''}.
          </p>
          <pre class="block">{JSON.stringify({ outputs: test.Outputs, console: test.Console }, null, 2)}</pre>
        </div>
      )}
    </Section>
  );
}
