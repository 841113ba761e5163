/**
 * Tables with paging, and the pager itself (offset pages or cursor pages). A table's last column,
 * `Actions`, is there only when `actions` is given (pages pass it for a writer only, so that a
 * viewer sees no control that would fail); `loading` shows "Loading…" in place of the empty text.
 */
import type { ComponentChildren } from 'preact';
import { ErrorNote, Section } from './ui.js';

export interface Column<T> {
  label: string;
  render: (row: T) => ComponentChildren;
  /** Right-aligned numbers. */
  numeric?: boolean;
}

export interface TableProps<T> {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty?: string;
  loading?: boolean;
  /** A reload in progress while the previous rows are shown (`aria-busy`). */
  busy?: boolean;
  /** The controls of a row (its `Actions` column); undefined: no such column. */
  actions?: ((row: T) => ComponentChildren) | undefined;
}

export function Table<T>(props: TableProps<T>) {
  const columns: Column<T>[] = props.actions
    ? [
        ...props.columns,
        { label: 'Actions', render: (r: T) => <div class="actions">{props.actions!(r)}</div> },
      ]
    : props.columns;
  return (
    <div class="table-wrap">
      {/* Roles spelled out: on a phone the rows are laid out as cards (display: block), which
          would otherwise drop the table's semantics. */}
      <table role="table" class="cards" aria-busy={props.busy || undefined}>
        <caption class="sr-only">{props.caption}</caption>
        <thead role="rowgroup">
          <tr role="row">
            {columns.map((c) => (
              <th key={c.label} role="columnheader" scope="col" class={c.numeric ? 'num' : ''}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody role="rowgroup">
          {props.rows.length === 0 ? (
            <tr role="row">
              <td role="cell" colSpan={columns.length} class="muted">
                {props.loading ? 'Loading…' : (props.empty ?? 'Nothing yet.')}
              </td>
            </tr>
          ) : (
            props.rows.map((r) => (
              <tr key={props.rowKey(r)} role="row">
                {columns.map((c) => (
                  <td key={c.label} role="cell" data-label={c.label} class={c.numeric ? 'num' : ''}>
                    {c.render(r)}
                  </td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

/** Previous / next page buttons around "Page n of m (…)". */
export function PagerNav(props: {
  label: string;
  page: number;
  pages: number;
  total: string;
  hasPrevious: boolean;
  hasNext: boolean;
  onPrevious: () => void;
  onNext: () => void;
}) {
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" class="btn" disabled={!props.hasPrevious} onClick={props.onPrevious}>
        Previous page
      </button>
      <span>
        Page {props.page} of {props.pages} ({props.total})
      </span>
      <button type="button" class="btn" disabled={!props.hasNext} onClick={props.onNext}>
        Next page
      </button>
    </nav>
  );
}

/** Previous / next over `total` items, `limit` a page. */
export function Pager(props: {
  label: string;
  offset: number;
  limit: number;
  total: number;
  onOffset: (offset: number) => void;
}) {
  const { offset, limit, total } = props;
  return (
    <PagerNav
      label={props.label}
      page={Math.floor(offset / limit) + 1}
      pages={Math.max(1, Math.ceil(total / limit))}
      total={`${total} in all`}
      hasPrevious={offset > 0}
      hasNext={offset + limit < total}
      onPrevious={() => props.onOffset(Math.max(0, offset - limit))}
      onNext={() => props.onOffset(offset + limit)}
    />
  );
}

/**
 * A section listing what `list` loaded: its error, the table (with "Loading…" while it loads) and,
 * below it, what `children` adds (a writer's form to create one more, a secret shown once).
 */
export function ListSection<T>(
  props: {
    title: string;
    error: string | undefined;
    headActions?: ComponentChildren;
    children?: ComponentChildren;
  } & TableProps<T>,
) {
  const { title, error, headActions, children, ...table } = props;
  return (
    <Section title={title} actions={headActions}>
      <ErrorNote error={error} />
      <Table {...table} />
      {children}
    </Section>
  );
}
