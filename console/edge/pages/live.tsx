/**
 * Live values: every tag of every device in a virtualized table (only the rows on screen are in
 * the DOM), whose values update live over the `TagValues` subscription, only for the rows on
 * screen and at most at the chosen rate, applied in one animation frame; a trend of a chosen tag
 * from the edge's history, continued by its live values (history-trend.tsx); writing a value to a
 * tag (`WriteTag`), with confirmation and the result.
 */
import { memo } from 'preact/compat';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { errorText, gql, PATHS } from '../../shared/api.js';
import { HistoryTrend } from './history-trend.js';
import { Confirm, Dialog, SearchField } from '../../shared/form.js';
import { fmtTime, fmtValue } from '../../shared/format.js';
import {
  Badge,
  Button,
  ErrorNote,
  Page,
  Section,
  toast,
  toneOf,
  NARROW,
  useCanWrite,
  useLoad,
  useMedia,
} from '../../shared/ui.js';
import type { TagStatus } from '../devicehub.js';
import { subscribe } from '../../shared/ws.js';

interface Row {
  ID: string;
  DeviceName: string;
  TagName: string;
  ValueType: string;
}

/** A row's height (styles.css): one line at 1280 px; two on a phone (the tag, then value, state, actions). */
const ROW_HEIGHT = 37;
const NARROW_ROW_HEIGHT = 66;
/** Rows rendered beyond the visible ones, above and below. */
const OVERSCAN = 3;
/** Rows added a frame when a new list is first rendered. */
const CHUNK = 5;
/** At most this many tags listed (ten pages of the API's largest page). */
const MAX_ROWS = 10_000;
/** The most tags one subscription follows (the API's bound). */
const MAX_FOLLOWED = 1000;
const RATES = [
  { ms: 250, label: 'Four times a second' },
  { ms: 500, label: 'Twice a second' },
  { ms: 1000, label: 'Once a second' },
  { ms: 2000, label: 'Every 2 seconds' },
  { ms: 5000, label: 'Every 5 seconds' },
];
/** Points kept per trend (about 3 hours at one a second). */
const MAX_POINTS = 10_000;

async function loadRows(pattern: string): Promise<{ rows: Row[]; total: number }> {
  const rows: Row[] = [];
  let from: string | null = null;
  let total = 0;
  while (rows.length < MAX_ROWS) {
    const r: { ListRegistersFromAllDevices: { TotalCount: number; Last: string | null; Registers: Row[] } } =
      await gql(
        PATHS.devicehub,
        'query A($input: ListRegistersFromAllDevicesRequest) { ListRegistersFromAllDevices(input: $input) { TotalCount Last Registers { ID DeviceName TagName ValueType } } }',
        {
          input: {
            Limit: 1000,
            ...(from ? { ContinueFrom: from } : {}),
            ...(pattern ? { TagPattern: pattern } : {}),
          },
        },
      );
    const page = r.ListRegistersFromAllDevices;
    total = page.TotalCount;
    rows.push(...page.Registers);
    if (!page.Last || page.Registers.length === 0 || rows.length >= total) break;
    from = page.Last;
  }
  return { rows, total };
}

export default function Live() {
  const canWrite = useCanWrite();
  const [pattern, setPattern] = useState('');
  const [rate, setRate] = useState(1000);
  const [chosen, setChosen] = useState<Row>();
  const [writing, setWriting] = useState<Row>();
  const list = useLoad(() => loadRows(pattern), [pattern]);
  const rows = list.data?.rows ?? [];
  const [range, setRange] = useState({ first: 0, last: 20 });
  const status = useRef(new Map<string, TagStatus>());
  const trend = useRef(new Map<string, [number, number][]>());
  const [, setFrame] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const rowHeight = useMedia(NARROW) ? NARROW_ROW_HEIGHT : ROW_HEIGHT;

  const onScroll = () => {
    const el = box.current;
    if (!el) return;
    // A few rows of margin on each side: each row is some twenty layout objects.
    const first = Math.max(0, Math.floor(el.scrollTop / rowHeight) - OVERSCAN);
    const last = Math.min(
      rows.length,
      Math.floor(el.scrollTop / rowHeight) + Math.ceil(el.clientHeight / rowHeight) + OVERSCAN,
    );
    if (first !== range.first || last !== range.last) setRange({ first, last });
  };
  useEffect(onScroll, [rows.length, rowHeight]);

  // The visible rows (and the charted tag) are followed over the TagValues subscription, at most
  // at the chosen rate; after a scroll, the subscription is replaced once the scrolling settles.
  // Messages are applied in one animation frame, so a burst of updates is one render.
  const visible = useMemo(() => rows.slice(range.first, range.last), [rows, range]);
  // A new list is rendered a few rows a frame (its first layout is the page's longest task);
  // scrolling renders the rows it brings at once.
  const [shown, setShown] = useState(CHUNK);
  useEffect(() => setShown(CHUNK), [rows]);
  useEffect(() => {
    if (shown >= visible.length) return;
    const f = requestAnimationFrame(() => setShown((n) => n + CHUNK));
    return () => cancelAnimationFrame(f);
  }, [shown, visible.length]);
  const rendered = shown >= visible.length ? visible : visible.slice(0, shown);
  const [liveError, setLiveError] = useState<string>();
  useEffect(() => {
    const ids = visible.map((r) => r.ID);
    if (chosen && !ids.includes(chosen.ID)) ids.push(chosen.ID);
    if (ids.length === 0) return;
    let frame = 0;
    let stop: (() => void) | undefined;
    const settle = setTimeout(() => {
      stop = subscribe<{ TagValues: TagStatus[] }>(
        PATHS.devicehub,
        'subscription V($input: TagValuesRequest!) { TagValues(input: $input) { ID State Reason Value Timestamp } }',
        { input: { IDs: ids.slice(0, MAX_FOLLOWED), IntervalMs: rate } },
        (d) => {
          const now = Date.now() / 1000;
          for (const s of d.TagValues) {
            status.current.set(s.ID, s);
            const points = trend.current.get(s.ID);
            if (points && typeof s.Value === 'number') {
              points.push([now, s.Value]);
              if (points.length > MAX_POINTS) points.splice(0, points.length - MAX_POINTS);
            }
          }
          setLiveError(undefined);
          if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setFrame((f) => f + 1)));
        },
        setLiveError,
      );
    }, 150);
    return () => {
      clearTimeout(settle);
      cancelAnimationFrame(frame);
      stop?.();
    };
  }, [visible, rate, chosen]);

  const choose = useCallback((r: Row) => {
    if (!trend.current.has(r.ID)) trend.current.set(r.ID, []);
    setChosen(r);
  }, []);

  return (
    <Page title="Live values">
      <Section title="Tags">
        <div class="row">
          <SearchField id="live-search" label="Filter tags" value={pattern} onSearch={setPattern} onCommit />
          <div class="field">
            <label for="live-rate">Update rate</label>
            <select id="live-rate" value={rate} onChange={(e) => setRate(Number(e.currentTarget.value))}>
              {RATES.map((r) => (
                <option key={r.ms} value={r.ms}>
                  {r.label}
                </option>
              ))}
            </select>
          </div>
          <span class="muted">
            {list.loading
              ? 'Loading…'
              : `${rows.length} of ${list.data?.total ?? 0} tags; values of the ${visible.length} rows on screen update`}
          </span>
        </div>
        <ErrorNote error={list.error} />
        <ErrorNote error={liveError} />
        <div
          class="virtual"
          ref={box}
          onScroll={onScroll}
          role="region"
          aria-label="Live values table"
          tabIndex={0}
        >
          {/* Two-line rows on a phone (styles.css): the roles keep the table's semantics there. */}
          <table class="live" role="table">
            <caption class="sr-only">Live values</caption>
            <thead role="rowgroup">
              <tr role="row">
                <th role="columnheader" scope="col" class="wide-only">
                  Device
                </th>
                <th role="columnheader" scope="col">
                  Tag
                </th>
                <th role="columnheader" scope="col" class="num col-value">
                  Value
                </th>
                <th role="columnheader" scope="col" class="col-state">
                  State
                </th>
                <th role="columnheader" scope="col" class="wide-only col-since">
                  Since
                </th>
                <th role="columnheader" scope="col" class="col-actions">
                  Actions
                </th>
              </tr>
            </thead>
            <tbody role="rowgroup">
              {/* The spacers are one cell (no colspan): a colspan would count the phone's hidden
                  columns, and the table's width would be shared with columns nobody sees. */}
              <tr class="spacer" aria-hidden="true">
                <td style={{ height: `${range.first * rowHeight}px` }} />
              </tr>
              {rendered.map((r) => (
                <LiveRow
                  key={r.ID}
                  row={r}
                  status={status.current.get(r.ID)}
                  canWrite={canWrite}
                  onTrend={choose}
                  onWrite={setWriting}
                />
              ))}
              <tr class="spacer" aria-hidden="true">
                <td
                  style={{
                    height: `${Math.max(0, rows.length - range.first - rendered.length) * rowHeight}px`,
                  }}
                />
              </tr>
            </tbody>
          </table>
        </div>
      </Section>
      {chosen && (
        <Section
          title={`Trend of ${chosen.DeviceName}.${chosen.TagName}`}
          actions={<Button onClick={() => setChosen(undefined)}>Close the trend</Button>}
        >
          <HistoryTrend
            name={`${chosen.DeviceName}.${chosen.TagName}`}
            live={trend.current.get(chosen.ID) ?? []}
          />
        </Section>
      )}
      {writing && <WriteDialog row={writing} onClose={() => setWriting(undefined)} />}
    </Page>
  );
}

/**
 * One row; memoized, so that a frame of updates re-renders only the rows whose status object
 * changed (each message of the subscription brings new objects for the tags it names).
 */
const LiveRow = memo(function LiveRow(props: {
  row: Row;
  status: TagStatus | undefined;
  canWrite: boolean;
  onTrend: (r: Row) => void;
  onWrite: (r: Row) => void;
}) {
  const { row: r, status: s } = props;
  return (
    <tr role="row">
      <td role="cell" class="wide-only">
        {r.DeviceName}
      </td>
      <td role="cell" class="live-tag">
        {/* On a phone the Device column is hidden: the tag says its device. */}
        <span class="narrow-only">{r.DeviceName}.</span>
        {r.TagName}
      </td>
      <td role="cell" class="num mono live-value" aria-label={`Value of ${r.DeviceName}.${r.TagName}`}>
        {fmtValue(s?.Value)}
      </td>
      <td role="cell" class="live-state">
        {s && <Badge tone={toneOf(s.State)}>{s.State}</Badge>}
      </td>
      <td role="cell" class="wide-only">
        {fmtTime(s?.Timestamp)}
      </td>
      <td role="cell" class="live-actions">
        <div class="actions">
          {/* The visible word starts the accessible name (WCAG label in name). */}
          <Button class="btn-small" aria-label={`Trend ${r.TagName}`} onClick={() => props.onTrend(r)}>
            Trend
          </Button>
          {props.canWrite && (
            <Button class="btn-small" aria-label={`Write ${r.TagName}`} onClick={() => props.onWrite(r)}>
              Write
            </Button>
          )}
        </div>
      </td>
    </tr>
  );
});

interface WriteResult {
  Success: boolean;
  Value: unknown;
  Error: string | null;
}

function WriteDialog(props: { row: Row; onClose: () => void }) {
  const [value, setValue] = useState('');
  const [asking, setAsking] = useState(false);
  const [result, setResult] = useState<WriteResult>();
  const [error, setError] = useState<string>();
  const name = `${props.row.DeviceName}.${props.row.TagName}`;
  const write = async () => {
    setError(undefined);
    let parsed: unknown = value;
    try {
      parsed = JSON.parse(value);
    } catch {
      /* a plain string */
    }
    try {
      const r = await gql<{ WriteTag: WriteResult }>(
        PATHS.devicehub,
        'mutation W($input: WriteTagRequest!) { WriteTag(input: $input) { Success Value Error } }',
        { input: { ID: props.row.ID, Value: parsed } },
      );
      setResult(r.WriteTag);
      if (r.WriteTag.Success) toast(`Wrote ${fmtValue(r.WriteTag.Value)} to ${name}`);
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <>
      <Dialog title={`Write a value to ${name}`} open={!asking} onClose={() => !asking && props.onClose()}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setAsking(true);
          }}
        >
          <div class="field">
            <label for="write-value">New value ({props.row.ValueType})</label>
            <input id="write-value" value={value} onInput={(e) => setValue(e.currentTarget.value)} required />
          </div>
          {result && (
            <p role="status" class={result.Success ? '' : 'error-note'}>
              {result.Success
                ? `Written: ${fmtValue(result.Value)}`
                : `Refused: ${result.Error ?? 'unknown reason'}`}
            </p>
          )}
          <ErrorNote error={error} />
          <div class="form-actions">
            <button type="submit" class="btn btn-primary" disabled={value === ''}>
              Write value
            </button>
            <button type="button" class="btn" onClick={props.onClose}>
              Close
            </button>
          </div>
        </form>
      </Dialog>
      <Confirm
        title="Confirm the write"
        open={asking}
        confirmLabel="Write"
        onConfirm={() => void write()}
        onClose={() => setAsking(false)}
      >
        <p>
          Write <strong class="mono">{value}</strong> to <strong>{name}</strong>? The device receives it at
          once.
        </p>
      </Confirm>
    </>
  );
}
