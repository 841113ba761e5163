/**
 * A template's variables by scope: each `{{name}}` of its sections with the template's default,
 * the values set for a company, a project or a device (a device takes the device's value, else
 * its project's, else its company's, else the default), and a form to set one scope's values.
 */
import { useState } from 'preact/hooks';
import { Field, SchemaForm, type FieldSpec, type FormValues } from '../../shared/form.js';
import { fmtTime } from '../../shared/format.js';
import { Table } from '../../shared/table.js';
import { ErrorNote, Section, toast, useCanWrite, useLoad } from '../../shared/ui.js';
import {
  get,
  mrest,
  type Company,
  type Device,
  type Page as List,
  type Project,
  type Template,
} from '../api.js';

type Scalar = string | number | boolean;
type Parameters = Record<string, Record<string, Scalar>>;

interface Variable {
  section: string;
  name: string;
  defaultValue: Scalar | null;
  usedAt: string[];
}

interface ScopeValues {
  scopeType: 'GLOBAL' | 'COMPANY' | 'PROJECT' | 'DEVICE';
  scopeId: string | null;
  parameters: Parameters;
  updatedBy: string;
  updatedAt: string;
}

const SCOPE_LABEL = {
  GLOBAL: 'Everywhere',
  COMPANY: 'Company',
  PROJECT: 'Project',
  DEVICE: 'Device',
} as const;
const ORDER = ['GLOBAL', 'COMPANY', 'PROJECT', 'DEVICE'];
const key = (v: Variable) => `${v.section}.${v.name}`;

export function TemplateVars(props: { template: Template; devices: Device[] }) {
  const t = props.template;
  const id = encodeURIComponent(t.id);
  const canWrite = useCanWrite();
  const vars = useLoad(
    () => get<{ variables: Variable[] }>(`/api/v1/template/list-variables/v2?id=${id}`),
    [t.id],
  );
  const scopes = useLoad(
    () => get<{ scopes: ScopeValues[] }>(`/api/v1/activation/request/template/vars/v2?templateId=${id}`),
    [t.id],
  );
  const companies = useLoad(() => get<List<Company>>('/api/v1/company/list/paged?limit=500'));
  const projects = useLoad(() => get<List<Project>>('/api/v1/project/paged?limit=500'));
  const variables = vars.data?.variables ?? [];
  const scopeName = (s: ScopeValues) => {
    if (s.scopeType === 'COMPANY')
      return companies.data?.items.find((c) => c.id === s.scopeId)?.companyName ?? s.scopeId;
    if (s.scopeType === 'PROJECT') {
      const p = projects.data?.items.find((x) => x.id === s.scopeId);
      return p ? `${p.companyName} / ${p.name}` : s.scopeId;
    }
    if (s.scopeType === 'DEVICE') {
      const d = props.devices.find((x) => x.id === s.scopeId);
      return d ? (d.prettyName ?? d.name) : s.scopeId;
    }
    return 'every device';
  };
  const rows = [
    {
      scopeType: 'DEFAULT',
      scopeId: null,
      name: 'the template',
      values: defaults(variables),
      by: '',
      at: '',
    },
    ...[...(scopes.data?.scopes ?? [])]
      .sort((a, b) => ORDER.indexOf(a.scopeType) - ORDER.indexOf(b.scopeType))
      .map((s) => ({
        scopeType: s.scopeType as string,
        scopeId: s.scopeId,
        name: scopeName(s) ?? '',
        values: s.parameters,
        by: s.updatedBy,
        at: s.updatedAt,
      })),
  ];
  return (
    <Section title={`Variables of ${t.friendlyName}`}>
      <ErrorNote error={vars.error ?? scopes.error} />
      {variables.length === 0 && !vars.loading ? (
        <p class="muted">This template has no variable ({'{{name}}'} placeholder).</p>
      ) : (
        <>
          <p class="muted">
            A device takes its own value, else its project’s, else its company’s, else the template’s default.
          </p>
          <Table
            caption={`Values by scope of ${t.friendlyName}`}
            loading={scopes.loading && !scopes.data}
            rows={rows}
            rowKey={(r) => `${r.scopeType}:${r.scopeId ?? ''}`}
            columns={[
              {
                label: 'Scope',
                render: (r) =>
                  r.scopeType === 'DEFAULT' ? 'Default' : SCOPE_LABEL[r.scopeType as 'COMPANY'],
              },
              { label: 'Of', render: (r) => r.name },
              ...variables.map((v) => ({
                label: key(v),
                render: (r: (typeof rows)[number]) => String(r.values[v.section]?.[v.name] ?? ''),
              })),
              { label: 'Set', render: (r) => (r.at ? `${fmtTime(r.at)} by ${r.by}` : '') },
            ]}
          />
        </>
      )}
      {canWrite && variables.length > 0 && (
        <SetScope
          template={t}
          variables={variables}
          scopes={scopes.data?.scopes ?? []}
          companies={companies.data?.items ?? []}
          projects={projects.data?.items ?? []}
          devices={props.devices}
          onDone={scopes.reload}
        />
      )}
    </Section>
  );
}

function defaults(variables: Variable[]): Parameters {
  const out: Parameters = {};
  for (const v of variables) if (v.defaultValue !== null) (out[v.section] ??= {})[v.name] = v.defaultValue;
  return out;
}

/** Sets one scope's values (a blank value: the scope sets none, the next scope's counts). */
function SetScope(props: {
  template: Template;
  variables: Variable[];
  scopes: ScopeValues[];
  companies: Company[];
  projects: Project[];
  devices: Device[];
  onDone: () => void;
}) {
  const [scopeType, setScopeType] = useState<'COMPANY' | 'PROJECT' | 'DEVICE'>('DEVICE');
  const [scopeId, setScopeId] = useState('');
  const options =
    scopeType === 'COMPANY'
      ? props.companies.map((c) => ({ value: c.id, label: c.companyName }))
      : scopeType === 'PROJECT'
        ? props.projects.map((p) => ({ value: p.id, label: `${p.companyName} / ${p.name}` }))
        : props.devices.map((d) => ({ value: d.id, label: d.prettyName ?? d.name }));
  const target = scopeId || options[0]?.value || '';
  const current = props.scopes.find((s) => s.scopeType === scopeType && s.scopeId === target)?.parameters;
  const fields: FieldSpec[] = props.variables.map((v) => ({
    name: key(v),
    label: `Value of ${v.name} (${v.section})`,
    kind: 'text',
    ...(v.defaultValue !== null ? { description: `default: ${String(v.defaultValue)}` } : {}),
  }));
  const loaded: FormValues = Object.fromEntries(
    props.variables.map((v) => [key(v), String(current?.[v.section]?.[v.name] ?? '')]),
  );
  const [edits, setEdits] = useState<{ at: string; values: FormValues }>();
  const at = `${scopeType}:${target}`;
  const values = edits?.at === at ? edits.values : loaded;
  return (
    <>
      <h3>Set the values of a scope</h3>
      <div class="row">
        <Field
          spec={{
            name: 'scopeType',
            label: 'Scope',
            kind: 'select',
            required: true,
            options: [
              { value: 'COMPANY', label: 'Company' },
              { value: 'PROJECT', label: 'Project' },
              { value: 'DEVICE', label: 'Device' },
            ],
          }}
          value={scopeType}
          onInput={(v) => {
            setScopeType(v as 'DEVICE');
            setScopeId('');
          }}
        />
        <Field
          spec={{
            name: 'scopeId',
            label: `${SCOPE_LABEL[scopeType]} of the values`,
            kind: 'select',
            required: true,
            options,
          }}
          value={target}
          onInput={setScopeId}
        />
      </div>
      <SchemaForm
        label="Values of the scope"
        fields={fields}
        values={values}
        onChange={(v) => setEdits({ at, values: v })}
        submitLabel="Save the values"
        onSubmit={async (v) => {
          if (!target) throw new Error(`choose a ${scopeType.toLowerCase()} first`);
          const parameters: Parameters = {};
          for (const x of props.variables) {
            const value = v[key(x)]?.trim() ?? '';
            if (value !== '') (parameters[x.section] ??= {})[x.name] = value;
          }
          await mrest('POST', '/api/v1/activation/request/template/vars/v2', {
            templateId: props.template.id,
            scopes: [{ scopeType, scopeId: target, parameters }],
          });
          toast(`Values saved for the ${scopeType.toLowerCase()}`);
          setEdits(undefined);
          props.onDone();
        }}
      />
    </>
  );
}
