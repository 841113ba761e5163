/**
 * `ListProviderModels`: the models of a provider. `local` is the edge itself (the uploaded
 * models of the AI suite); any other name is a provider configuration of the suite (a `provider`
 * file, JSON `{"type": "openai", "baseUrl": "...", "apiKey": "..."}`) for an OpenAI-compatible
 * endpoint, asked `GET <baseUrl>/v1/models` within a deadline and a bounded reply.
 */
import { readFile } from 'node:fs/promises';
import { badRequest } from '../../kernel/errors.js';
import type { AISuite } from './ai-suite.js';

/** A provider's reply at most, bytes. */
export const MAX_PROVIDER_REPLY = 1024 * 1024;
/** A provider configuration file at most, bytes. */
const MAX_PROVIDER_FILE = 64 * 1024;

export interface ProviderModel {
  id: string;
  ownedBy: string | null;
  created: number | null;
  size: number | null;
}

interface ProviderConfig {
  type: 'openai';
  baseUrl: string;
  apiKey?: string;
}

async function providerConfig(suite: AISuite, name: string): Promise<ProviderConfig> {
  const f = await suite.file('provider', name);
  if (f.size > MAX_PROVIDER_FILE) throw badRequest(`provider ${name}: the file is larger than 64 KiB`);
  let c: unknown;
  try {
    c = JSON.parse(await readFile(suite.filePath('provider', name), 'utf8'));
  } catch {
    throw badRequest(`provider ${name}: the file is not JSON`);
  }
  const o = c as Partial<ProviderConfig> | null;
  if (!o || typeof o !== 'object' || o.type !== 'openai')
    throw badRequest(`provider ${name}: "type" must be "openai" (an OpenAI-compatible endpoint)`);
  if (typeof o.baseUrl !== 'string' || !/^https?:\/\//.test(o.baseUrl))
    throw badRequest(`provider ${name}: "baseUrl" must be an http(s) URL`);
  if (o.apiKey !== undefined && typeof o.apiKey !== 'string')
    throw badRequest(`provider ${name}: "apiKey" must be a string`);
  return o as ProviderConfig;
}

/** `<baseUrl>/v1/models`, or `<baseUrl>/models` when the base already ends in `/v1`. */
export function modelsUrl(baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return /\/v1$/.test(base) ? `${base}/models` : `${base}/v1/models`;
}

export async function listProviderModels(
  suite: AISuite,
  provider: string,
  timeoutMs: number,
): Promise<ProviderModel[]> {
  if (provider === 'local')
    return (await suite.files('model')).map((f) => ({
      id: f.name,
      ownedBy: 'local',
      created: null,
      size: f.size,
    }));
  const cfg = await providerConfig(suite, provider);
  const url = modelsUrl(cfg.baseUrl);
  let text: string;
  // undici is loaded by the first listing (it is large, and most edges never list a provider's models).
  const { request } = await import('undici');
  try {
    const res = await request(url, {
      headers: cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of res.body) {
      n += (c as Buffer).length;
      if (n > MAX_PROVIDER_REPLY) {
        res.body.destroy();
        throw new Error(`the reply is larger than ${MAX_PROVIDER_REPLY} bytes`);
      }
      chunks.push(c as Buffer);
    }
    text = Buffer.concat(chunks).toString('utf8');
    if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}: ${text.slice(0, 200)}`);
  } catch (err) {
    const e = err as Error;
    const why =
      e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : e.message;
    throw badRequest(`provider ${provider}: GET ${url}: ${why}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest(`provider ${provider}: GET ${url} did not answer JSON`);
  }
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw badRequest(`provider ${provider}: GET ${url} answered no "data" list`);
  return data
    .filter((m): m is Record<string, unknown> => !!m && typeof m === 'object' && typeof m.id === 'string')
    .map((m) => ({
      id: m.id as string,
      ownedBy: typeof m.owned_by === 'string' ? m.owned_by : null,
      created: typeof m.created === 'number' ? m.created : null,
      size: null,
    }));
}
