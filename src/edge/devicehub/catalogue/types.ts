/**
 * The shape of the driver catalogue, and the small builders every driver family file uses. The
 * catalogue is data: a driver is its identity, its device properties and its register (tag)
 * types; the rules of contract part 2.4 live in the data, and one validator (`../validation.ts`)
 * applies them to every driver alike.
 */
import { createHash } from 'node:crypto';
import { propertyLabel } from '../../../kernel/labels.js';

/** Kinds of property value (GraphQL `ValueTypeEnum`). */
export type PropertyType =
  | 'String'
  | 'SignedInteger'
  | 'UnsignedInteger'
  | 'Float'
  | 'Boolean'
  | 'Password'
  | 'Table'
  | 'RowFixedTable';

export interface ListValue {
  value: string;
  label: string;
}

/** A column of a `Table` or `RowFixedTable` property. */
export interface TableColumn {
  name: string;
  label: string;
  valueType: Exclude<PropertyType, 'Table' | 'RowFixedTable'>;
  /** The column's cells keep their default and cannot be set (a `RowFixedTable`'s row key). */
  readOnly: boolean;
  /** A cell may be left empty. */
  allowEmpty: boolean;
  listValues?: ListValue[];
}

export interface PropertyDef {
  name: string;
  label: string;
  description: string;
  type: PropertyType;
  required: boolean;
  /** Applied when the property is not given; always a valid value of the property. */
  default?: string;
  min?: number;
  max?: number;
  /** When present, the only values allowed (the driver's `ListValues`). */
  listValues?: ListValue[];
  /** Columns of a table property; a `RowFixedTable` default lists its fixed rows. */
  columns?: TableColumn[];
}

export interface RegisterDef {
  /** Register (area) name, e.g. `S`, `HR`, `I_bit`. */
  name: string;
  description: string;
  /** Address range of the register; absent for registers addressed by name (OPC UA node, topic). */
  addressMin?: number;
  addressMax?: number;
  /** Value types a tag on this register may have. */
  valueTypes: string[];
  /** Tag properties (the `address` property is added from the range). */
  properties: PropertyDef[];
}

export interface DriverDef {
  /** Stable key; the driver's ID is derived from it and never changes. */
  key: string;
  /** Stable UUID. */
  id: string;
  name: string;
  /** Protocol family, e.g. `Modbus`, `Logix`, `OPC UA`. */
  protocol: string;
  description: string;
  /** Whether this build of Millwright can poll devices of this driver. */
  pollable: boolean;
  /** Whether a browse task can list the device's address space. */
  browsable: boolean;
  properties: PropertyDef[];
  registers: RegisterDef[];
}

/** The stable UUID of a driver key (name-based, SHA-1, RFC 9562 version 5 layout). */
export function driverId(key: string): string {
  const h = createHash('sha1').update(`millwright.devicehub.driver:${key}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

export function driver(def: Omit<DriverDef, 'id' | 'browsable'> & { browsable?: boolean }): DriverDef {
  return { browsable: false, ...def, id: driverId(def.key) };
}

// ---------------------------------------------------------------------------------------------
// Property builders

interface Opts {
  default?: string | number | boolean;
  required?: boolean;
  label?: string;
  min?: number;
  max?: number;
}

function make(
  type: PropertyType,
  name: string,
  description: string,
  o: Opts = {},
  extra: Partial<PropertyDef> = {},
) {
  const def: PropertyDef = {
    name,
    label: o.label ?? propertyLabel(name, description),
    description,
    type,
    required: o.required ?? false,
    ...extra,
  };
  if (o.default !== undefined) def.default = String(o.default);
  if (o.min !== undefined) def.min = o.min;
  if (o.max !== undefined) def.max = o.max;
  return def;
}

export const prop = {
  string: (name: string, description: string, o?: Opts) => make('String', name, description, o),
  password: (name: string, description: string, o?: Opts) => make('Password', name, description, o),
  int: (name: string, description: string, o?: Opts) => make('SignedInteger', name, description, o),
  uint: (name: string, description: string, o?: Opts) =>
    make('UnsignedInteger', name, description, { min: 0, ...o }),
  float: (name: string, description: string, o?: Opts) => make('Float', name, description, o),
  bool: (name: string, description: string, o?: Opts) => make('Boolean', name, description, o),
  /** A property whose allowed values are listed (`ListValues`). */
  select: (
    type: 'String' | 'SignedInteger' | 'UnsignedInteger',
    name: string,
    description: string,
    values: Array<[string | number, string]>,
    o?: Opts,
  ) =>
    make(type, name, description, o, {
      listValues: values.map(([value, label]) => ({ value: String(value), label })),
    }),
  table: (name: string, description: string, columns: TableColumn[], o?: Opts) =>
    make('Table', name, description, o, { columns }),
  /** A table whose rows are fixed by the default; only the columns that are not ReadOnly may change. */
  rowFixedTable: (
    name: string,
    description: string,
    columns: TableColumn[],
    rows: Record<string, string>[],
  ) => make('RowFixedTable', name, description, { default: JSON.stringify(rows) }, { columns }),
};

export const column = (
  name: string,
  valueType: TableColumn['valueType'],
  o: { readOnly?: boolean; allowEmpty?: boolean; label?: string; listValues?: ListValue[] } = {},
): TableColumn => ({
  name,
  label: o.label ?? propertyLabel(name),
  valueType,
  readOnly: o.readOnly ?? false,
  allowEmpty: o.allowEmpty ?? false,
  ...(o.listValues ? { listValues: o.listValues } : {}),
});

/** A register; with a range, the tag property `address` (required, within the range) is added first. */
export function register(
  name: string,
  description: string,
  range: [number, number] | null,
  valueTypes: string[],
  properties: PropertyDef[] = [],
): RegisterDef {
  const reg: RegisterDef = { name, description, valueTypes, properties };
  if (range) {
    reg.addressMin = range[0];
    reg.addressMax = range[1];
    reg.properties = [
      prop.uint('address', `address within ${name}, ${range[0]}-${range[1]}`, {
        min: range[0],
        max: range[1],
        required: true,
      }),
      ...properties,
    ];
  }
  return reg;
}

// ---------------------------------------------------------------------------------------------
// Shared property sets

/** Parity of the fourteen serial drivers of part 2.4: 0 None, 1 Odd, 2 Even (3 Mark and 4 Space removed). */
export const PARITY_FOURTEEN: Array<[number, string]> = [
  [0, 'None'],
  [1, 'Odd'],
  [2, 'Even'],
];
/** Parity of the five Modbus-family serial drivers: SignedInteger, 1 = Even, 2 = Odd. */
export const PARITY_MODBUS: Array<[number, string]> = [
  [0, 'None'],
  [1, 'Even'],
  [2, 'Odd'],
];

export const parityFourteen = (o: Opts = {}) =>
  prop.select('UnsignedInteger', 'parity', 'parity bit of the serial line', PARITY_FOURTEEN, {
    default: 0,
    ...o,
  });
export const parityModbus = (o: Opts = {}) =>
  prop.select('SignedInteger', 'parity', 'parity bit of the serial line', PARITY_MODBUS, {
    default: 0,
    ...o,
  });

const BAUD_RATES = [300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200];

/** Serial line settings; `parity` is given by the driver family. */
export function serialLine(parity: PropertyDef, o: { baud?: number; dataBits?: number } = {}): PropertyDef[] {
  return [
    prop.string('serialPort', 'serial device, e.g. /dev/ttyUSB0 or COM3', { required: true }),
    prop.select(
      'UnsignedInteger',
      'baudRate',
      'line speed in bits per second',
      BAUD_RATES.map((b) => [b, String(b)]),
      { default: o.baud ?? 9600 },
    ),
    prop.select(
      'UnsignedInteger',
      'dataBits',
      'data bits per character',
      [
        [7, '7'],
        [8, '8'],
      ],
      { default: o.dataBits ?? 8 },
    ),
    prop.select(
      'UnsignedInteger',
      'stopBits',
      'stop bits per character',
      [
        [1, '1'],
        [2, '2'],
      ],
      { default: 1 },
    ),
    parity,
  ];
}

/** Network endpoint settings. */
export function network(port: number, o: { host?: string } = {}): PropertyDef[] {
  return [
    prop.string('host', 'IP address or host name of the device', {
      required: o.host === undefined,
      ...(o.host ? { default: o.host } : {}),
    }),
    prop.uint('port', 'TCP or UDP port of the device', { min: 1, max: 65535, default: port }),
  ];
}

/** Request timing common to polled drivers. */
export function timing(
  o: { requestTimeoutMs?: number; retries?: number; name?: string } = {},
): PropertyDef[] {
  return [
    prop.uint(o.name ?? 'requestTimeoutMs', 'time to wait for an answer, in milliseconds', {
      min: 10,
      max: 60000,
      default: o.requestTimeoutMs ?? 2000,
    }),
    prop.uint('retryRequestCount', 'retries of a request that got no answer', {
      min: 0,
      max: 10,
      default: o.retries ?? 0,
    }),
  ];
}

export const keepAlive = (dflt = 5) =>
  prop.uint('KeepAlive', 'seconds between keep-alive probes of an idle connection', {
    min: 0,
    max: 3600,
    default: dflt,
  });

export const INTEGER_TYPES = ['int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64'];
export const NUMERIC_TYPES = [...INTEGER_TYPES, 'float32', 'float64'];
/** Value types of word registers of most PLC drivers. */
export const WORD_TYPES = ['int16', 'uint16', 'int32', 'uint32', 'float32', 'float64', 'string'];

/** Word and byte order of multi-register values. */
export const byteOrder = () =>
  prop.select(
    'String',
    'byteOrder',
    'order of bytes and words of multi-register values',
    [
      ['ABCD', 'big endian'],
      ['DCBA', 'little endian'],
      ['BADC', 'big endian, bytes swapped'],
      ['CDAB', 'little endian, bytes swapped'],
    ],
    { default: 'ABCD' },
  );

export const stringLength = () =>
  prop.uint('length', 'characters of a string value', { min: 1, max: 255, default: 10 });
