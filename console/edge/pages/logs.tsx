/**
 * Logs: a live tail (polling `/logs/query` with the reply's `cursor` as `start`, so every new entry
 * comes exactly once) filtered by level, component and text; older pages with the `cursor`.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText, rest } from '../../shared/api.js';
import { fmtTime } from '../../shared/format.js';
import { SearchField } from '../../shared/form.js';
import { Badge, Button, ErrorNote, Page, Section, useInterval } from '../../shared/ui.js';

interface Entry {
  timestamp: string;
  level: string;
  message: string;
  component: string;
  fields: Record<string, unknown>;
}

interface Reply {
  entries: Entry[];
  count: number;
  cursor: string | null;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const LIMIT = 100;
/** Entries kept on screen. */
const KEEP = 2000;

function query(
  filters: { level: string; component: string; search: string },
  extra: Record<string, string>,
): string {
  const q = new URLSearchParams({ limit: String(LIMIT), ...extra });
  if (filters.level) q.set('level', filters.level);
  if (filters.component) q.set('component', filters.component);
  if (filters.search) q.set('search', filters.search);
  return `/logs/query?${q.toString()}`;
}

export default function Logs() {
  const [filters, setFilters] = useState({ level: 'info', component: '', search: '' });
  const [entries, setEntries] = useState<Entry[]>([]);
  const [tailing, setTailing] = useState(true);
  const [error, setError] = useState<string>();
  // `start` for the tail (newest entry's time) and `cursor` for paging back (the oldest page held).
  const newest = useRef<string | null>(null);
  const older = useRef<string | null>(null);
  const [more, setMore] = useState(true);

  useEffect(() => {
    let live = true;
    setEntries([]);
    rest<Reply>('GET', query(filters, {})).then(
      (r) => {
        if (!live) return;
        setEntries(r.entries);
        newest.current = r.cursor;
        older.current = r.cursor;
        setMore(r.count === LIMIT);
        setError(undefined);
      },
      (err: unknown) => setError(errorText(err)),
    );
    return () => {
      live = false;
    };
  }, [filters.level, filters.component, filters.search]);

  useInterval(() => {
    if (!tailing || !newest.current) return;
    rest<Reply>('GET', query(filters, { start: newest.current })).then(
      (r) => {
        if (r.entries.length === 0) return;
        newest.current = r.cursor;
        setEntries((e) => [...e, ...r.entries].slice(-KEEP));
      },
      (err: unknown) => setError(errorText(err)),
    );
  }, 1500);

  const loadOlder = async () => {
    if (!older.current) return;
    try {
      const r = await rest<Reply>('GET', query(filters, { cursor: older.current }));
      if (r.entries.length === 0) setMore(false);
      else {
        older.current = r.cursor;
        setEntries((e) => [...r.entries, ...e]);
      }
    } catch (err) {
      setError(errorText(err));
    }
  };

  const set = (k: keyof typeof filters) => (e: Event) =>
    setFilters({ ...filters, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <Page title="Logs">
      <Section
        title="Log entries"
        actions={
          <Button aria-pressed={tailing} onClick={() => setTailing(!tailing)}>
            {tailing ? 'Pause the tail' : 'Resume the tail'}
          </Button>
        }
      >
        <div class="row">
          <div class="field">
            <label for="log-level">Minimum level</label>
            <select id="log-level" value={filters.level} onChange={set('level')}>
              <option value="">any</option>
              {LEVELS.map((l) => (
                <option key={l} value={l}>
                  {l}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="log-component">Component</label>
            <input
              id="log-component"
              placeholder="e.g. edge.auth"
              value={filters.component}
              onChange={set('component')}
            />
          </div>
          <SearchField
            id="log-search"
            label="Text"
            value={filters.search}
            onSearch={(search) => setFilters({ ...filters, search })}
            onCommit
          />
        </div>
        <ErrorNote error={error} />
        <div class="form-actions">
          <Button disabled={!more} onClick={() => void loadOlder()}>
            {more ? 'Load older entries' : 'No older entries'}
          </Button>
        </div>
        <div class="table-wrap">
          {/* Cards on a phone (styles.css): the roles keep the table's semantics there. */}
          <table role="table" class="cards">
            <caption class="sr-only">Log entries, oldest first</caption>
            <thead role="rowgroup">
              <tr role="row">
                <th role="columnheader" scope="col">
                  Time
                </th>
                <th role="columnheader" scope="col">
                  Level
                </th>
                <th role="columnheader" scope="col">
                  Component
                </th>
                <th role="columnheader" scope="col">
                  Message
                </th>
              </tr>
            </thead>
            <tbody role="rowgroup" aria-live={tailing ? 'off' : undefined}>
              {entries.map((e) => (
                <tr key={e.timestamp} role="row">
                  <td role="cell" data-label="Time" class="mono">
                    {fmtTime(e.timestamp)}
                  </td>
                  <td role="cell" data-label="Level">
                    <Badge
                      tone={
                        e.level === 'error' || e.level === 'fatal'
                          ? 'bad'
                          : e.level === 'warn'
                            ? 'warn'
                            : 'info'
                      }
                    >
                      {e.level}
                    </Badge>
                  </td>
                  <td role="cell" data-label="Component">
                    {e.component}
                  </td>
                  <td role="cell" data-label="Message">
                    <div>
                      {e.message}
                      {Object.keys(e.fields).length > 0 && (
                        <div class="muted mono log-fields">{JSON.stringify(e.fields).slice(0, 300)}</div>
                      )}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {entries.length === 0 && <p class="muted">No entry matches.</p>}
      </Section>
    </Page>
  );
}
