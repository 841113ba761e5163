/** Tables with paging, and the pager itself (offset pages or cursor pages). */
import type { ComponentChildren } from 'preact';

export interface Column<T> {
  label: string;
  render: (row: T) => ComponentChildren;
  /** Right-aligned numbers. */
  numeric?: boolean;
}

export function Table<T>(props: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty?: string;
}) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c.label} scope="col" class={c.numeric ? 'num' : ''}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.length === 0 ? (
            <tr>
              <td colSpan={props.columns.length} class="muted">
                {props.empty ?? 'Nothing yet.'}
              </td>
            </tr>
          ) : (
            props.rows.map((r) => (
              <tr key={props.rowKey(r)}>
                {props.columns.map((c) => (
                  <td key={c.label} class={c.numeric ? 'num' : ''}>
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

/** Previous / next over `total` items, `limit` a page. */
export function Pager(props: {
  label: string;
  offset: number;
  limit: number;
  total: number;
  onOffset: (offset: number) => void;
}) {
  const { offset, limit, total } = props;
  const page = Math.floor(offset / limit) + 1;
  const pages = Math.max(1, Math.ceil(total / limit));
  return (
    <nav class="pager" aria-label={props.label}>
      <button
        type="button"
        class="btn"
        disabled={offset === 0}
        onClick={() => props.onOffset(Math.max(0, offset - limit))}
      >
        Previous page
      </button>
      <span>
        Page {page} of {pages} ({total} in all)
      </span>
      <button
        type="button"
        class="btn"
        disabled={offset + limit >= total}
        onClick={() => props.onOffset(offset + limit)}
      >
        Next page
      </button>
    </nav>
  );
}
