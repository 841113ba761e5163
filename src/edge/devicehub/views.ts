/** The wire shapes (PascalCase, as `/devicehub/v2` names them) of stored devices and registers. */
import { findDriver } from './catalogue/index.js';
import type { DeviceRow, RegisterTuple, RegisterWithDevice } from './repository.js';
import { parseJson } from './rows.js';
import { topicsOf, type Topic } from './topics.js';
import { DATA_TYPE_PROPERTY, type Device, type NameValue, type Param, type Register } from './types.js';

export const iso = (ms: number) => new Date(ms).toISOString();

export function deviceView(row: DeviceRow): Device {
  const driver = findDriver(row.driver_id);
  const props = parseJson(row.properties) as Record<string, string>;
  return {
    ID: row.id,
    Name: row.name,
    DriverID: row.driver_id,
    DriverName: driver?.name ?? '',
    Description: row.description,
    Properties: Object.entries(props).map(([Key, Value]) => ({ Key, Value })),
    MetaData: parseJson(row.metadata) as Record<string, unknown>,
    DHParams: parseJson(row.dh_params || '[]') as Param[],
    WorkerParams: parseJson(row.worker_params || '[]') as Param[],
    AliasTopics: row.alias_topics === 1,
    Debug: row.debug === 1,
    CreationTime: iso(Number(row.created_at)),
    UpdateTime: iso(Number(row.updated_at)),
  };
}

/** A register's values as `RegisterTuple` has them (the page reads its rows as arrays). */
export function registerTuple(row: RegisterWithDevice): RegisterTuple {
  return [
    row.id,
    row.device_id,
    row.name,
    row.tag_name,
    row.description,
    row.value_type,
    row.publish_cov,
    row.tag_formula,
    row.interval_ms,
    row.properties,
    row.metadata,
    row.created_at,
    row.updated_at,
    row.device_name,
    row.alias_topics,
  ];
}

/**
 * A register in the wire shape. Properties, MetaData and Topics are worked out only when read
 * (GraphQL reads only the selected fields), which keeps a page of 1,000 cheap.
 */
class RegisterNode implements Register {
  readonly ID: string;
  readonly DeviceID: string;
  readonly DeviceName: string;
  readonly Name: string;
  readonly TagName: string;
  readonly Description: string;
  readonly ValueType: string;
  readonly PublishCoV: boolean;
  readonly TagFormula: string;
  readonly IntervalMs: number;
  readonly #r: RegisterTuple;
  // Worked out on the first read and kept for the others: graphql-jit's compiled query reads a
  // list field several times (`Topics { Format Topic }`: 5 reads a register), and each read of
  // Topics built the register's topics anew: about 3 MiB of garbage a page of 1,000.
  #properties: NameValue[] | undefined;
  #metaData: Record<string, unknown> | undefined;
  #topics: Topic[] | undefined;

  constructor(r: RegisterTuple) {
    this.#r = r;
    this.ID = r[0];
    this.DeviceID = r[1];
    this.DeviceName = r[13];
    this.Name = r[2];
    this.TagName = r[3];
    this.Description = r[4];
    this.ValueType = r[5];
    this.PublishCoV = r[6] === 1;
    this.TagFormula = r[7];
    this.IntervalMs = r[8];
  }

  /**
   * The register's properties, and its data type as `DataType` (the tag's `ValueType`), where
   * the product family's clients look it up (wire notes); a driver's own `DataType` wins.
   */
  get Properties(): NameValue[] {
    return (this.#properties ??= this.#workOutProperties());
  }

  #workOutProperties(): NameValue[] {
    const props = parseJson(this.#r[9]) as Record<string, string>;
    const out = Object.entries(props).map(([Name, Value]) => ({ Name, Value }));
    if (!Object.hasOwn(props, DATA_TYPE_PROPERTY))
      out.push({ Name: DATA_TYPE_PROPERTY, Value: this.ValueType });
    return out;
  }

  get MetaData(): Record<string, unknown> {
    return (this.#metaData ??= parseJson(this.#r[10]) as Record<string, unknown>);
  }

  get Topics(): Topic[] {
    const r = this.#r;
    return (this.#topics ??= topicsOf(r[13], r[3], {
      aliasTopics: r[14] === 1,
      valueType: r[5],
      intervalMs: r[8],
    }));
  }

  get CreationTime(): string {
    return iso(Number(this.#r[11]));
  }

  toJSON(): Register {
    return {
      ID: this.ID,
      DeviceID: this.DeviceID,
      DeviceName: this.DeviceName,
      Name: this.Name,
      TagName: this.TagName,
      Description: this.Description,
      ValueType: this.ValueType,
      PublishCoV: this.PublishCoV,
      TagFormula: this.TagFormula,
      IntervalMs: this.IntervalMs,
      Properties: this.Properties,
      MetaData: this.MetaData,
      Topics: this.Topics,
      CreationTime: this.CreationTime,
    };
  }
}

export function registerView(row: RegisterWithDevice): Register {
  return new RegisterNode(registerTuple(row));
}

/** A register in the wire shape from its values as a page reads them. */
export function registerViewOf(r: RegisterTuple): Register {
  return new RegisterNode(r);
}
