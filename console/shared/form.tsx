/**
 * Forms generated from a schema (a driver's properties, a provider's schema, a settings object):
 * one labelled control per field, typed by its kind (text, number, switch, list of values,
 * secret, long text), defaults filled in, required fields marked, and the API's validation
 * message shown beside the field it names. Plus the confirmation dialog.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.js';

export type FieldKind = 'text' | 'number' | 'boolean' | 'select' | 'password' | 'textarea' | 'json';

export interface FieldSpec {
  name: string;
  label: string;
  kind: FieldKind;
  required?: boolean;
  description?: string;
  default?: string;
  options?: { value: string; label: string }[];
  min?: number;
  max?: number;
}

export type FormValues = Record<string, string>;

let uid = 0;
/** A stable id for a label's `for`. */
export function useId(prefix: string): string {
  const ref = useRef<string | undefined>(undefined);
  ref.current ??= `${prefix}-${++uid}`;
  return ref.current;
}

/** The values a form starts with: the given ones over the fields' defaults. */
export function initialValues(fields: FieldSpec[], given: FormValues = {}): FormValues {
  const out: FormValues = {};
  for (const f of fields) out[f.name] = given[f.name] ?? f.default ?? (f.kind === 'boolean' ? 'false' : '');
  return out;
}

/**
 * The field an API message is about: the one whose name it quotes (`property "Host"`), else the
 * one it names as a word (`Name is required`); undefined when it names none.
 */
export function fieldOfMessage(fields: FieldSpec[], message: string): string | undefined {
  const quoted = fields.find((f) => message.includes(`"${f.name}"`));
  if (quoted) return quoted.name;
  return fields.find((f) => new RegExp(`(^|[^A-Za-z])${f.name}([^A-Za-z]|$)`).test(message))?.name;
}

export function Field(props: {
  spec: FieldSpec;
  value: string;
  error?: string | undefined;
  disabled?: boolean;
  onInput: (v: string) => void;
}) {
  const { spec, value, error } = props;
  const id = useId(`f-${spec.name}`);
  const describedBy = [spec.description ? `${id}-d` : '', error ? `${id}-e` : ''].filter(Boolean).join(' ');
  const common = {
    id,
    name: spec.name,
    disabled: props.disabled,
    'aria-invalid': error ? true : undefined,
    'aria-describedby': describedBy || undefined,
    required: spec.required,
  };
  let control: ComponentChildren;
  if (spec.kind === 'boolean') {
    control = (
      <input
        {...common}
        type="checkbox"
        checked={value === 'true'}
        onChange={(e) => props.onInput(String(e.currentTarget.checked))}
      />
    );
  } else if (spec.kind === 'select') {
    control = (
      <select {...common} value={value} onChange={(e) => props.onInput(e.currentTarget.value)}>
        {!spec.required && <option value="">(default)</option>}
        {spec.required && value === '' && <option value="">Choose…</option>}
        {spec.options?.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    );
  } else if (spec.kind === 'textarea' || spec.kind === 'json') {
    control = (
      <textarea
        {...common}
        rows={spec.kind === 'json' ? 6 : 4}
        value={value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
    );
  } else {
    control = (
      <input
        {...common}
        type={(spec.kind === 'password' ? 'password' : spec.kind === 'number' ? 'number' : 'text') as 'text'}
        {...(spec.min !== undefined ? { min: spec.min } : {})}
        {...(spec.max !== undefined ? { max: spec.max } : {})}
        step={spec.kind === 'number' ? 'any' : undefined}
        autoComplete={spec.kind === 'password' ? 'new-password' : 'off'}
        value={value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
    );
  }
  return (
    <div class={`field ${spec.kind === 'boolean' ? 'field-check' : ''} ${error ? 'field-bad' : ''}`}>
      <span class="label-row">
        <label for={id}>{spec.label}</label>
        {spec.required && (
          <span class="req" aria-hidden="true">
            *
          </span>
        )}
      </span>
      {control}
      {spec.description && (
        <small id={`${id}-d`} class="hint">
          {spec.description}
        </small>
      )}
      {error && (
        <small id={`${id}-e`} class="field-error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

/**
 * A form of `fields`. `onSubmit` answers nothing on success or throws; the thrown error's text is
 * shown beside the field it names, or above the buttons.
 */
export function SchemaForm(props: {
  label: string;
  fields: FieldSpec[];
  values: FormValues;
  onChange: (v: FormValues) => void;
  onSubmit: (v: FormValues) => Promise<void>;
  submitLabel: string;
  /** The text of a refusal (default: the API's own message). */
  errorOf?: (err: unknown) => string;
  onCancel?: () => void;
  /** One row (a short form beside a list: a name and a role) instead of a grid with an actions bar. */
  inline?: boolean;
  children?: ComponentChildren;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ field?: string; text: string }>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await props.onSubmit(props.values);
    } catch (err) {
      const text = (props.errorOf ?? errorText)(err);
      const field = fieldOfMessage(props.fields, text);
      setError(field ? { field, text } : { text });
    } finally {
      setBusy(false);
    }
  };
  const fields = props.fields.map((f) => (
    <Field
      key={f.name}
      spec={f}
      value={props.values[f.name] ?? ''}
      error={error?.field === f.name ? error.text : undefined}
      onInput={(v) => props.onChange({ ...props.values, [f.name]: v })}
    />
  ));
  const buttons = (
    <>
      <button type="submit" class="btn btn-primary" disabled={busy}>
        {busy ? 'Working…' : props.submitLabel}
      </button>
      {props.onCancel && (
        <button type="button" class="btn" onClick={props.onCancel}>
          Cancel
        </button>
      )}
    </>
  );
  return (
    <form class="form" aria-label={props.label} onSubmit={submit} noValidate>
      {props.children}
      {props.inline ? (
        <div class="row">
          {fields}
          {buttons}
        </div>
      ) : (
        <>
          <div class="form-grid">{fields}</div>
          <div class="form-actions">{buttons}</div>
        </>
      )}
      {error && !error.field && (
        <p class="error-note" role="alert">
          {error.text}
        </p>
      )}
    </form>
  );
}

/** A labelled search box (filters a list as the user types, or on change when `onChange` only). */
export function SearchField(props: {
  id: string;
  label: string;
  value: string;
  onSearch: (v: string) => void;
  /** Search when the field is left or Enter is pressed, not at each key (a costly search). */
  onCommit?: boolean;
}) {
  const set = (e: { currentTarget: HTMLInputElement }) => props.onSearch(e.currentTarget.value);
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="search"
        value={props.value}
        {...(props.onCommit ? { onChange: set } : { onInput: set })}
      />
    </div>
  );
}

/** A modal dialog (the platform's `<dialog>`): focus kept inside, Escape closes. */
export function Dialog(props: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId('dlg');
  // After every render, not only when `open` changes: a dialog closed by Escape (the platform's
  // own close) and opened again before its `close` event re-rendered keeps `open` true throughout.
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  });
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={id}
      // The platform's close event comes a task later: by then the dialog may have been opened
      // again (Escape, then Enter on the button at once), and that opening must stand.
      onClose={() => !ref.current?.open && props.onClose()}
    >
      {props.open && (
        <>
          <h2 id={id}>{props.title}</h2>
          {props.children}
        </>
      )}
    </dialog>
  );
}

/** Asks before an action; `onConfirm` runs when the user confirms. */
export function Confirm(props: {
  title: string;
  open: boolean;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onClose: () => void;
  children: ComponentChildren;
}) {
  return (
    <Dialog title={props.title} open={props.open} onClose={props.onClose}>
      <div class="dialog-body">{props.children}</div>
      <div class="form-actions">
        <button
          type="button"
          class={`btn ${props.danger ? 'btn-danger' : 'btn-primary'}`}
          onClick={() => {
            props.onConfirm();
            props.onClose();
          }}
        >
          {props.confirmLabel}
        </button>
        <button type="button" class="btn" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

/**
 * A confirmation asked about one item (delete this device, roll back to this snapshot): answers
 * `ask(item)`, which opens the dialog, and the dialog to render; `onConfirm(item)` runs when the
 * user confirms.
 */
export function useConfirm<T>(opts: {
  title: string;
  confirmLabel: string;
  danger?: boolean;
  body: (item: T) => ComponentChildren;
  onConfirm: (item: T) => void;
}): [(item: T) => void, ComponentChildren] {
  const [item, setItem] = useState<{ value: T }>();
  const dialog = (
    <Confirm
      title={opts.title}
      open={item !== undefined}
      confirmLabel={opts.confirmLabel}
      {...(opts.danger ? { danger: true } : {})}
      onConfirm={() => item && opts.onConfirm(item.value)}
      onClose={() => setItem(undefined)}
    >
      {item && opts.body(item.value)}
    </Confirm>
  );
  return [(value: T) => setItem({ value }), dialog];
}

/**
 * A choice of several items: a `fieldset` named by its legend, one labelled checkbox an item;
 * `selected` keeps the order they were checked in (the order of a composition's parts).
 */
export function Checklist(props: {
  legend: string;
  options: { value: string; label: string }[];
  selected: string[];
  onChange: (selected: string[]) => void;
  empty?: string;
}) {
  const id = useId('check');
  return (
    <fieldset class="checklist">
      <legend>{props.legend}</legend>
      {props.options.length === 0 && <p class="muted">{props.empty ?? 'Nothing to choose from.'}</p>}
      {props.options.map((o, i) => (
        <div key={o.value} class="field-check">
          <input
            id={`${id}-${i}`}
            type="checkbox"
            checked={props.selected.includes(o.value)}
            onChange={(e) =>
              props.onChange(
                e.currentTarget.checked
                  ? [...props.selected, o.value]
                  : props.selected.filter((v) => v !== o.value),
              )
            }
          />
          <label for={`${id}-${i}`}>{o.label}</label>
        </div>
      ))}
    </fieldset>
  );
}
