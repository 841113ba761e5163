/**
 * The trend of one tag from the edge's history (`/history/aggregate`): a window of 1 h, 1 d or
 * 7 d, zoomed by dragging over the chart and panned with the arrows; while it ends at now, the
 * live values continue the line.
 */
import { useEffect, useState } from 'preact/hooks';
import { errorText, rest } from '../../shared/api.js';
import { Trend } from '../../shared/chart.js';
import { Button, ErrorNote } from '../../shared/ui.js';

interface AggregateReply {
  bucketMs: number;
  series: Array<{ tag: string; buckets: Array<{ ts: number; mean: number }> }>;
}

const SPANS = [
  { label: '1 h', ms: 3_600_000 },
  { label: '1 d', ms: 86_400_000 },
  { label: '7 d', ms: 7 * 86_400_000 },
];

export function HistoryTrend(props: { name: string; live: [number, number][] }) {
  const [win, setWin] = useState({ span: SPANS[0]!.ms, to: 0 }); // to 0: now, following live values
  const [past, setPast] = useState<[number, number][]>([]);
  const [error, setError] = useState<string>();
  useEffect(() => {
    let dead = false;
    const to = win.to || Date.now();
    const q = new URLSearchParams({
      tag: props.name,
      from: String(Math.round(to - win.span)),
      to: String(Math.round(to)),
      points: '1000',
    });
    rest<AggregateReply>('GET', `/history/aggregate?${q}`).then(
      (r) => {
        if (dead) return;
        setError(undefined);
        setPast((r.series[0]?.buckets ?? []).map((b) => [(b.ts + r.bucketMs / 2) / 1000, b.mean]));
      },
      (err: unknown) => !dead && setError(errorText(err)),
    );
    return () => {
      dead = true;
    };
  }, [props.name, win]);
  const lastPast = past.length > 0 ? past[past.length - 1]![0] : 0;
  const points = win.to === 0 ? [...past, ...props.live.filter((p) => p[0] > lastPast)] : past;
  const pan = (dir: number) =>
    setWin((w) => ({ span: w.span, to: Math.min(Date.now(), (w.to || Date.now()) + (dir * w.span) / 2) }));
  return (
    <>
      <div class="row">
        {SPANS.map((s) => (
          <Button key={s.label} onClick={() => setWin({ span: s.ms, to: 0 })}>
            {s.label}
          </Button>
        ))}
        <Button onClick={() => pan(-1)}>◀ Earlier</Button>
        <Button onClick={() => pan(1)}>Later ▶</Button>
        <Button onClick={() => setWin((w) => ({ span: w.span, to: 0 }))}>Now</Button>
      </div>
      <p class="muted">
        {win.to === 0 ? 'The last' : 'Up to ' + new Date(win.to).toLocaleString() + ':'}{' '}
        {Math.round(win.span / 60_000)} min from the history ({past.length} buckets)
        {win.to === 0 ? ', then live values' : ''}; drag over the chart to zoom.
      </p>
      <ErrorNote error={error} />
      <Trend
        label={props.name}
        points={points}
        onZoom={(from, to) => setWin({ span: (to - from) * 1000, to: to * 1000 })}
      />
    </>
  );
}
