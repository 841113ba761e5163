/**
 * `WriteTag`: a value written to a tag through its device, over the DataHub command of the tag
 * (`devicehub.command.<device>.<tag>`, answered by the acquisition engine with the driver's write
 * response), so that a client without a NATS connection (the browser console) can write too.
 */
import { badRequest, notFound } from '../../kernel/errors.js';
import { NoRespondersError, RequestTimeoutError, type DataHub } from '../datahub/index.js';
import type { DeviceHubService } from './service.js';

export const WRITE_TIMEOUT_MS = 5000;
export const MAX_WRITE_TIMEOUT_MS = 30_000;

export interface WriteTagRequest {
  ID: string;
  Value: unknown;
  TimeoutMs?: number | null;
}

export interface WriteTagResponse {
  Success: boolean;
  Value: unknown;
  Error: string | null;
  Timestamp: string;
}

/** Writes `input.Value` to the tag `input.ID` and answers the device's write response. */
export async function writeTag(
  hub: DataHub,
  devicehub: DeviceHubService,
  input: WriteTagRequest,
): Promise<WriteTagResponse> {
  const timeout = input.TimeoutMs ?? WRITE_TIMEOUT_MS;
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > MAX_WRITE_TIMEOUT_MS) {
    throw badRequest(
      `TimeoutMs must be an integer from 1 to ${MAX_WRITE_TIMEOUT_MS}, got ${String(timeout)}`,
    );
  }
  if (input.Value === undefined || input.Value === null) throw badRequest('Value is required');
  const tag = await devicehub.getRegister(input.ID);
  if (!tag) throw notFound(`no tag "${input.ID}"`);
  const subject = `devicehub.command.${tag.DeviceName}.${tag.TagName}`;
  const failed = (error: string): WriteTagResponse => ({
    Success: false,
    Value: null,
    Error: error,
    Timestamp: new Date().toISOString(),
  });
  try {
    const reply = await hub.request(subject, { value: input.Value }, { timeout });
    const answer = reply.json<{ success?: boolean; value?: unknown; error?: string; timestamp?: number }>();
    return {
      Success: answer.success === true,
      Value: answer.value ?? null,
      Error: answer.success === true ? null : (answer.error ?? 'the device refused the write'),
      Timestamp: new Date(answer.timestamp ?? Date.now()).toISOString(),
    };
  } catch (err) {
    if (err instanceof NoRespondersError)
      return failed('the acquisition engine does not answer (is it running?)');
    if (err instanceof RequestTimeoutError) return failed(`no write response within ${timeout} ms`);
    throw err;
  }
}
