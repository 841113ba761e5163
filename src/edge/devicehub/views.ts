/** The wire shapes (PascalCase, as `/devicehub/v2` names them) of stored devices and registers. */
import { findDriver } from './catalogue/index.js';
import type { DeviceRow, RegisterWithDevice } from './repository.js';
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
  readonly #row: RegisterWithDevice;

  constructor(row: RegisterWithDevice) {
    this.#row = row;
    this.ID = row.id;
    this.DeviceID = row.device_id;
    this.DeviceName = row.device_name;
    this.Name = row.name;
    this.TagName = row.tag_name;
    this.Description = row.description;
    this.ValueType = row.value_type;
    this.PublishCoV = row.publish_cov === 1;
    this.TagFormula = row.tag_formula;
    this.IntervalMs = row.interval_ms;
  }

  /**
   * The register's properties, and its data type as `DataType` (the tag's `ValueType`), where
   * the product family's clients look it up (wire notes); a driver's own `DataType` wins.
   */
  get Properties(): NameValue[] {
    const props = parseJson(this.#row.properties) as Record<string, string>;
    const out = Object.entries(props).map(([Name, Value]) => ({ Name, Value }));
    if (!Object.hasOwn(props, DATA_TYPE_PROPERTY))
      out.push({ Name: DATA_TYPE_PROPERTY, Value: this.ValueType });
    return out;
  }

  get MetaData(): Record<string, unknown> {
    return parseJson(this.#row.metadata) as Record<string, unknown>;
  }

  get Topics(): Topic[] {
    return topicsOf(this.#row.device_name, this.#row.tag_name, {
      aliasTopics: this.#row.alias_topics === 1,
      valueType: this.#row.value_type,
      intervalMs: this.#row.interval_ms,
    });
  }

  get CreationTime(): string {
    return iso(Number(this.#row.created_at));
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
  return new RegisterNode(row);
}
