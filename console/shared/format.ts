/** Formatting helpers shared by the pages. */

export function fmtBytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

// One formatter each, made once: `toLocaleString` with options builds a new one at every call,
// which a table of live values calls many times a second.
const numberFormats = new Map<number, Intl.NumberFormat>();
const timeFormat = new Intl.DateTimeFormat('en-GB', {
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
});

export function fmtNum(n: number | undefined, digits = 0): string {
  if (n === undefined || !Number.isFinite(n)) return '–';
  let f = numberFormats.get(digits);
  if (!f) {
    f = new Intl.NumberFormat('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
    numberFormats.set(digits, f);
  }
  return f.format(n);
}

export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : timeFormat.format(d);
}

export function fmtValue(v: unknown): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, '');
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** The sum of the samples of `metric` in a Prometheus text exposition. */
export function promSum(text: string, metric: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(metric) || (line[metric.length] !== ' ' && line[metric.length] !== '{')) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum = (sum ?? 0) + v;
  }
  return sum;
}

/** Triggers a download of `text` as file `name`. */
export function download(name: string, text: string, type = 'text/plain'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
