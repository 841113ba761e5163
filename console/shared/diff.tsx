/**
 * Diffs for people: `lineDiff` (the shortest edit script of two texts' lines, Myers' algorithm,
 * bounded) and `DiffView`, a unified diff (removed lines in `del`, added ones in `ins`, three lines
 * of context around each change, "…" where unchanged lines are folded away), labelled for
 * assistive technology. `jsonLines` writes a value as the lines a diff of JSON compares.
 */
import { Fragment } from 'preact';

export type DiffLine = { op: ' ' | '-' | '+'; text: string };

/** Edits beyond this many lines are not worth a line diff: the two sides are shown whole. */
const MAX_EDITS = 1000;

/** The lines of `a` turned into those of `b`: kept (' '), removed ('-') and added ('+'), in order. */
export function lineDiff(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDITS);
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  if (!found)
    return [
      ...a.map((text) => ({ op: '-' as const, text })),
      ...b.map((text) => ({ op: '+' as const, text })),
    ];
  // Walk the trace back from the end.
  const out: DiffLine[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const vd = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[off + k - 1]! < vd[off + k + 1]!) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : vd[off + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      out.push({ op: ' ', text: a[--x]! });
      y--;
    }
    if (d > 0) {
      if (x === prevX) out.push({ op: '+', text: b[--y]! });
      else out.push({ op: '-', text: a[--x]! });
    }
  }
  return out.reverse();
}

/** A value as indented JSON lines (none for undefined). */
export function jsonLines(value: unknown): string[] {
  return value === undefined ? [] : (JSON.stringify(value, null, 2) ?? '').split('\n');
}

/** The lines to show: every change with `context` lines around it; runs between them folded. */
function hunks(lines: DiffLine[], context = 3): (DiffLine | { fold: number })[] {
  const near = new Uint8Array(lines.length);
  lines.forEach((l, i) => {
    if (l.op === ' ') return;
    for (let j = Math.max(0, i - context); j <= Math.min(lines.length - 1, i + context); j++) near[j] = 1;
  });
  const out: (DiffLine | { fold: number })[] = [];
  let folded = 0;
  lines.forEach((l, i) => {
    if (near[i]) {
      if (folded) out.push({ fold: folded });
      folded = 0;
      out.push(l);
    } else folded++;
  });
  if (folded) out.push({ fold: folded });
  return out;
}

/** A unified diff of `before` and `after` (lines), named `label`; "No change" when they are the same. */
export function DiffView(props: { label: string; before: string[]; after: string[] }) {
  const lines = lineDiff(props.before, props.after);
  const added = lines.filter((l) => l.op === '+').length;
  const removed = lines.filter((l) => l.op === '-').length;
  return (
    <figure class="diff" aria-label={props.label}>
      <figcaption>
        {props.label}: <span class="diff-added">+{added}</span> <span class="diff-removed">−{removed}</span>
      </figcaption>
      {added + removed === 0 ? (
        <p class="muted">No change.</p>
      ) : (
        <pre tabIndex={0}>
          {hunks(lines).map((h, i) =>
            'fold' in h ? (
              <span key={i} class="diff-fold">
                {`  … ${h.fold} unchanged line${h.fold === 1 ? '' : 's'}\n`}
              </span>
            ) : (
              <Fragment key={i}>
                {h.op === '+' ? (
                  <ins>{`+ ${h.text}\n`}</ins>
                ) : h.op === '-' ? (
                  <del>{`- ${h.text}\n`}</del>
                ) : (
                  <span>{`  ${h.text}\n`}</span>
                )}
              </Fragment>
            ),
          )}
        </pre>
      )}
    </figure>
  );
}
