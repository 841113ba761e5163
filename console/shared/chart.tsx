/**
 * A trend chart over uPlot, loaded on demand (uPlot is not in the initial bundle). `points` are
 * [epoch seconds, value]; the chart follows them as they grow.
 */
import { useEffect, useRef } from 'preact/hooks';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export function Trend(props: {
  label: string;
  points: [number, number][];
  width?: number;
  height?: number;
  /** Called with the range (epoch seconds) the user dragged over; the chart zooms to it. */
  onZoom?: (from: number, to: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const latest = useRef(props.points);
  latest.current = props.points;
  useEffect(() => {
    let dead = false;
    void import('uplot').then((mod) => {
      if (dead || !box.current) return;
      const U = mod.default;
      const width = props.width ?? Math.max(280, box.current.clientWidth || 600);
      plot.current = new U(
        {
          width,
          height: props.height ?? 240,
          series: [{}, { label: props.label, stroke: '#1d5fbf', width: 2 }],
          // One line of time per tick (uPlot's default adds a second line with the date, which
          // the first tick centres half outside the chart).
          axes: [{ stroke: '#333', values: (u, splits) => tickLabels(u, splits) }, { stroke: '#333' }],
          hooks: {
            setSelect: [
              (u) => {
                if (u.select.width <= 0 || !props.onZoom) return;
                props.onZoom(u.posToVal(u.select.left, 'x'), u.posToVal(u.select.left + u.select.width, 'x'));
              },
            ],
          },
        },
        [[], []],
        box.current,
      );
      // The points known by now (the history arrived while uPlot was loading).
      plot.current.setData(columns(latest.current));
    });
    return () => {
      dead = true;
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [props.label]);
  useEffect(() => {
    plot.current?.setData(columns(props.points));
  });
  return (
    <div
      ref={box}
      class="trend"
      role="img"
      aria-label={`Trend of ${props.label}`}
      data-points={props.points.length}
    />
  );
}

function columns(points: [number, number][]): [number[], number[]] {
  return [points.map((p) => p[0]), points.map((p) => p[1])];
}

const clock = new Intl.DateTimeFormat('en-GB', {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
});
const clockMinutes = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false });
const dayAndTime = new Intl.DateTimeFormat('en-GB', {
  day: '2-digit',
  month: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  hour12: false,
});

/** Tick labels of the time axis: seconds within 10 minutes, minutes within 2 days, else the day too. */
function tickLabels(u: uPlot, splits: number[]): string[] {
  const span = (u.scales.x?.max ?? 0) - (u.scales.x?.min ?? 0);
  const f = span <= 600 ? clock : span <= 2 * 86_400 ? clockMinutes : dayAndTime;
  return splits.map((s) => f.format(new Date(s * 1000)));
}
