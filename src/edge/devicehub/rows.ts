/**
 * Rows from requests (validated against the driver catalogue) and the domain configurations from
 * rows. The only place that turns the DeviceHub's stored shape into another.
 */
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { findDriver } from './catalogue/index.js';
import type { DeviceRow, RegisterRow, RegisterWithDevice } from './repository.js';
import {
  DATA_TYPE_PROPERTY,
  DEFAULT_INTERVAL_MS,
  MAX_INTERVAL_MS,
  MIN_INTERVAL_MS,
  type CreateDeviceRequest,
  type CreateRegisterRequest,
  type DeviceConfig,
  type Param,
  type ParamInput,
  type TagConfig,
} from './types.js';
import { checkName, checkValueType, findRegister, resolveProperties } from './validation.js';

/** Parses a JSON text column; an empty text is `{}`. */
export const parseJson = (text: string): unknown => (text ? JSON.parse(text) : {});

/** A JSON object column read leniently: what cannot be parsed is `{}`. */
const parseObject = (text: string): Record<string, unknown> => {
  try {
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    return {};
  }
};

export const tagSubject = (tagName: string, deviceName: string) =>
  `tag ${JSON.stringify(tagName)} of device ${JSON.stringify(deviceName)}`;

export function devicePropertyInputs(list: CreateDeviceRequest['Properties']) {
  return (list ?? []).map((p) => ({ name: p.Key, value: p.Value }));
}

export function metaData(subject: string, value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  let v = value;
  if (typeof v === 'string') {
    if (v.trim() === '') return {};
    try {
      v = JSON.parse(v);
    } catch {
      throw badRequest(
        `${subject}: MetaData ${JSON.stringify(value)} is not allowed; allowed values: a JSON object`,
      );
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw badRequest(
      `${subject}: MetaData ${JSON.stringify(value)} is not allowed; allowed values: a JSON object`,
    );
  }
  return v as Record<string, unknown>;
}

export function params(subject: string, field: string, list: ParamInput[] | null | undefined): Param[] {
  const out: Param[] = [];
  const seen = new Set<string>();
  for (const p of list ?? []) {
    if (!p.Name) throw badRequest(`${subject}: every ${field} entry needs a Name`);
    if (seen.has(p.Name)) throw badRequest(`${subject}: ${field} "${p.Name}" is given more than once`);
    seen.add(p.Name);
    out.push({ Name: p.Name, Value: p.Value ?? '', Description: p.Description ?? '' });
  }
  return out;
}

/**
 * A register's properties without the `DataType` its view shows (the tag's `ValueType`, see
 * `views.ts`), so that a client may send back the properties it read. Given, it must name the
 * tag's `ValueType`; it is never stored. A driver with a `DataType` property of its own keeps it.
 */
function withoutDataType<P extends { Name: string; Value?: string | null | undefined }>(
  subject: string,
  defs: readonly { name: string }[],
  valueType: string,
  given: readonly P[],
): P[] {
  if (defs.some((d) => d.name === DATA_TYPE_PROPERTY)) return [...given];
  return given.filter((p) => {
    if (p.Name !== DATA_TYPE_PROPERTY) return true;
    if (p.Value !== null && p.Value !== undefined && p.Value !== '' && p.Value !== valueType)
      throw badRequest(
        `${subject}: property DataType ${JSON.stringify(p.Value)} differs from ValueType ${JSON.stringify(valueType)}; a tag's data type is its ValueType`,
      );
    return false;
  });
}

/** Validates a tag against its device's driver; answers the row to store (a fresh ID). */
export function buildRegisterRow(
  device: DeviceRow,
  input: CreateRegisterRequest,
  base: Record<string, string> | undefined,
  now: number,
): RegisterRow {
  const tagName = checkName(`tag of device ${JSON.stringify(device.name)}`, 'TagName', input.TagName);
  const subject = tagSubject(tagName, device.name);
  const driver = findDriver(device.driver_id);
  if (!driver)
    throw new AppError(ERRORS.internal, `device "${device.name}" has an unknown driver ${device.driver_id}`);
  if (!input.Name)
    throw badRequest(
      `${subject}: Name (the register) is required; registers: ${driver.registers.map((r) => r.name).join(', ')}`,
    );
  const reg = findRegister(subject, driver, input.Name);
  if (!input.ValueType)
    throw badRequest(`${subject}: ValueType is required; allowed values: ${reg.valueTypes.join(', ')}`);
  checkValueType(subject, reg, input.ValueType);
  const interval = input.IntervalMs ?? DEFAULT_INTERVAL_MS;
  if (!Number.isSafeInteger(interval) || interval < MIN_INTERVAL_MS || interval > MAX_INTERVAL_MS) {
    throw badRequest(
      `${subject}: IntervalMs ${JSON.stringify(input.IntervalMs)} is not allowed; allowed values: integers from ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS}`,
    );
  }
  const properties = resolveProperties(
    subject,
    `register "${reg.name}" of driver "${driver.name}"`,
    reg.properties,
    withoutDataType(subject, reg.properties, input.ValueType, input.Properties ?? []).map((p) => ({
      name: p.Name,
      value: p.Value,
    })),
    base,
  );
  return {
    id: uuidv7(now),
    device_id: device.id,
    name: reg.name,
    tag_name: tagName,
    description: input.Description ?? '',
    value_type: input.ValueType,
    publish_cov: input.PublishCoV ? 1 : 0,
    tag_formula: input.TagFormula ?? '',
    interval_ms: interval,
    properties: JSON.stringify(properties),
    metadata: JSON.stringify(metaData(subject, input.MetaData)),
    created_at: now,
    updated_at: now,
  };
}

export function deviceConfig(row: DeviceRow): DeviceConfig {
  return {
    id: row.id,
    name: row.name,
    driverId: row.driver_id,
    description: row.description,
    properties: parseObject(row.properties) as Record<string, string>,
    metadata: parseObject(row.metadata),
    aliasTopics: row.alias_topics === 1,
    debug: row.debug === 1,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** An empty object shared by every tag without metadata (most of them): 100,000 fewer objects. */
const NO_METADATA: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

export function tagConfig(row: RegisterWithDevice): TagConfig {
  return {
    id: row.id,
    deviceId: row.device_id,
    deviceName: row.device_name,
    aliasTopics: row.alias_topics === 1,
    register: row.name,
    tagName: row.tag_name,
    description: row.description,
    valueType: row.value_type,
    publishCoV: row.publish_cov === 1,
    formula: row.tag_formula,
    intervalMs: row.interval_ms,
    properties: parseObject(row.properties) as Record<string, string>,
    metadata: row.metadata === '{}' || row.metadata === '' ? NO_METADATA : parseObject(row.metadata),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
