/**
 * Remote image pull (`POST /admin/v1/registry/image/upload-remote`, contract parts 2.10 and 4.5):
 * the request is a JSON body; it is recorded as an `IMAGE_PULL` task with the password sealed
 * (never stored or logged in clear). The task's one subtask asks the external registry for the
 * image's manifest (Docker Registry HTTP API v2) and records the answer; copying the image into an
 * internal registry needs one, which this manager does not have (docs/manager.md).
 */
import { badRequest } from '../../kernel/errors.js';
import type { Principal } from '../auth/index.js';
import type { SecretBox } from '../fleet/index.js';
import type { SubtaskOutcome, TaskHandler, TaskService } from '../tasks/index.js';
import type { RemotePullBody } from './schemas.js';

export interface PullParams {
  externalUrl: string;
  externalName: string;
  externalTag: string;
  internalName: string;
  internalTag: string;
  user: string | null;
  /** Sealed with the manager's credentials key. */
  password: string | null;
}

/** How long the manifest request may take. */
const PULL_TIMEOUT_MS = 15_000;

async function pull(box: SecretBox, p: PullParams): Promise<SubtaskOutcome> {
  const url = `${p.externalUrl.replace(/\/+$/, '')}/v2/${p.externalName}/manifests/${p.externalTag}`;
  const headers: Record<string, string> = {
    accept:
      'application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json',
  };
  if (p.user) {
    const pw = p.password ? box.open(p.password) : '';
    headers.authorization = `Basic ${Buffer.from(`${p.user}:${pw}`).toString('base64')}`;
  }
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(PULL_TIMEOUT_MS), redirect: 'follow' });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return {
      status: 'FAILED',
      error: `the registry at ${p.externalUrl} could not be reached: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
    };
  }
  await res.body?.cancel();
  if (res.status !== 200) {
    return {
      status: 'FAILED',
      error: `the registry answered ${res.status} for ${p.externalName}:${p.externalTag}`,
      result: { registryStatus: res.status },
    };
  }
  return {
    status: 'FAILED',
    error: `found ${p.externalName}:${p.externalTag} (${res.headers.get('docker-content-digest') ?? 'no digest'}), but this manager has no internal registry to copy it into`,
    result: { registryStatus: 200, digest: res.headers.get('docker-content-digest') },
  };
}

/** Remote pulls as `IMAGE_PULL` tasks: the request is checked and recorded; the task asks the registry. */
export class RegistryService {
  readonly #tasks: TaskService;
  readonly #box: SecretBox;

  constructor(tasks: TaskService, box: SecretBox) {
    this.#tasks = tasks;
    this.#box = box;
  }

  /** The handler of `IMAGE_PULL` tasks, for the task service. */
  taskHandler(): TaskHandler {
    const box = this.#box;
    return {
      type: 'IMAGE_PULL',
      description: 'pull an image from an external registry (recorded; see docs/manager.md)',
      publicParams: (p: PullParams) => ({ ...p, password: p.password ? '********' : null }),
      run: async (ctx) => {
        await ctx.markSent();
        return pull(box, ctx.task.params as PullParams);
      },
    };
  }

  /** Records the pull as a task (the password sealed) and answers the task. */
  async requestPull(principal: Principal, b: RemotePullBody) {
    let url: URL;
    try {
      url = new URL(b.externalUrl);
    } catch {
      throw badRequest(`externalUrl must be an http or https URL, got "${b.externalUrl}"`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw badRequest(`externalUrl must be an http or https URL, got "${b.externalUrl}"`);
    if (b.password !== undefined && !b.user) throw badRequest('password needs user');
    const params: PullParams = {
      externalUrl: url.origin + url.pathname.replace(/\/+$/, ''),
      externalName: b.externalName,
      externalTag: b.externalTag ?? 'latest',
      internalName: b.internalName ?? b.externalName,
      internalTag: b.internalTag ?? b.externalTag ?? 'latest',
      user: b.user ?? null,
      password: b.password ? this.#box.seal(b.password) : null,
    };
    return this.#tasks.create(principal, {
      type: 'IMAGE_PULL',
      description: `pull ${params.externalName}:${params.externalTag} from ${params.externalUrl} as ${params.internalName}:${params.internalTag}`,
      params,
      scope: { companyId: null, projectId: null },
      devices: [null],
      deadlineSeconds: 3600,
    });
  }
}
