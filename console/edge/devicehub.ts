/** The device hub's GraphQL documents and shapes the console uses, and driver schema → form fields. */
import { gql, PATHS } from '../shared/api.js';
import type { FieldSpec } from '../shared/form.js';

export interface ListValue {
  Value: string;
  Label: string;
}

export interface PropertyDefinition {
  Name: string;
  Label: string;
  Description: string;
  ValueType: string;
  Required: boolean;
  Default: string | null;
  Min: number | null;
  Max: number | null;
  ListValues: ListValue[];
}

export interface RegisterDefinition {
  Name: string;
  Description: string;
  ValueTypes: string[];
  Properties: PropertyDefinition[];
}

export interface Driver {
  ID: string;
  Name: string;
  Protocol: string;
  Description: string;
  Browsable: boolean;
  Properties: PropertyDefinition[];
  Registers: RegisterDefinition[];
}

export interface Device {
  ID: string;
  Name: string;
  DriverID: string;
  DriverName: string;
  Description: string;
  Properties: { Key: string; Value: string }[];
  UpdateTime: string;
}

export interface Register {
  ID: string;
  DeviceID: string;
  DeviceName: string;
  Name: string;
  TagName: string;
  Description: string;
  ValueType: string;
  IntervalMs: number;
  Properties: { Name: string; Value: string }[];
}

export interface TagStatus {
  ID: string;
  State: string;
  Reason: string;
  Value: unknown;
  Timestamp: string | null;
}

const PROPERTY = 'Name Label Description ValueType Required Default Min Max ListValues { Value Label }';
export const DRIVER_FIELDS = `ID Name Protocol Description Browsable Properties { ${PROPERTY} } Registers { Name Description ValueTypes Properties { ${PROPERTY} } }`;
export const DEVICE_FIELDS = 'ID Name DriverID DriverName Description Properties { Key Value } UpdateTime';
export const REGISTER_FIELDS =
  'ID DeviceID DeviceName Name TagName Description ValueType IntervalMs Properties { Name Value }';

let drivers: Promise<Driver[]> | undefined;

/** The driver catalogue (asked once per page load). */
export function listDrivers(): Promise<Driver[]> {
  drivers ??= (async () => {
    // Pages of 40: a driver with its properties and registers costs about 3,300 of the endpoint's
    // query cost budget (200,000).
    const all: Driver[] = [];
    for (let offset = 0; ; offset += 40) {
      const r = await gql<{ ListDrivers: { Items: Driver[]; Total: number } }>(
        PATHS.devicehub,
        `query D($input: ListDriversRequest) { ListDrivers(input: $input) { Total Items { ${DRIVER_FIELDS} } } }`,
        { input: { Limit: 40, Offset: offset } },
      );
      all.push(...r.ListDrivers.Items);
      if (r.ListDrivers.Items.length === 0 || all.length >= r.ListDrivers.Total) break;
    }
    return all.sort((a, b) => a.Name.localeCompare(b.Name));
  })().catch((err: unknown) => {
    drivers = undefined;
    throw err;
  });
  return drivers;
}

const KINDS: Record<string, FieldSpec['kind']> = {
  String: 'text',
  SignedInteger: 'number',
  UnsignedInteger: 'number',
  Float: 'number',
  Boolean: 'boolean',
  Password: 'password',
  Table: 'json',
  RowFixedTable: 'json',
};

/** One form field per driver property: type, list of values, default, required. */
export function fieldsOf(properties: PropertyDefinition[]): FieldSpec[] {
  return properties.map((p) => ({
    name: p.Name,
    label: p.Label || p.Name,
    kind: p.ListValues.length > 0 ? 'select' : (KINDS[p.ValueType] ?? 'text'),
    required: p.Required,
    ...(p.Description ? { description: p.Description } : {}),
    ...(p.Default !== null ? { default: p.Default } : {}),
    ...(p.ListValues.length > 0
      ? { options: p.ListValues.map((l) => ({ value: l.Value, label: l.Label || l.Value })) }
      : {}),
    ...(p.Min !== null ? { min: p.Min } : {}),
    ...(p.Max !== null ? { max: p.Max } : {}),
  }));
}
