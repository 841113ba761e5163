/**
 * Remote image pull (`POST /admin/v1/registry/image/upload-remote`, contract parts 2.10 and 4.5):
 * the request is a JSON body; it is recorded as an `IMAGE_PULL` task with the password sealed
 * (never stored or logged in clear). The task's one subtask asks the external registry for the
 * image's manifest (Docker Registry HTTP API v2) and records the answer; copying the image into an
 * internal registry needs one, which this manager does not have (docs/manager.md).
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import { principalOf } from '../auth/index.js';
import { SecretBox } from '../fleet/secret-box.js';
import type { ManagerModule } from '../modules.js';
import type { SubtaskOutcome, TaskService } from '../tasks/service.js';

declare module '../modules.js' {
  interface ManagerModules {
    registry: { tasks: TaskService; box: SecretBox };
  }
}

const Name = Type.String({ minLength: 1, maxLength: 255, pattern: '^[a-z0-9]+(?:[._/-][a-z0-9]+)*$' });
const Tag = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' });
export const RemotePullBody = Type.Object(
  {
    externalUrl: Type.String({ minLength: 1, maxLength: 2000 }),
    externalName: Name,
    externalTag: Type.Optional(Tag),
    internalName: Type.Optional(Name),
    internalTag: Type.Optional(Tag),
    user: Type.Optional(Type.String({ maxLength: 500 })),
    password: Type.Optional(Type.String({ maxLength: 5000 })),
  },
  { additionalProperties: false },
);
type RemotePullBody = Static<typeof RemotePullBody>;

interface PullParams {
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

async function registryRoutes(app: FastifyInstance, options: { tasks: TaskService; box: SecretBox }) {
  // An empty JSON body is "missing", not a parse error.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_r, body, done) => {
    const text = String(body).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(badRequest(`the request body is not JSON: ${(err as Error).message}`), undefined);
    }
  });
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.body === null)
      throw new AppError(
        ERRORS.missingBody,
        'Required request body is missing: send the pull request as a JSON body',
      );
  });
  app.post<{ Body: RemotePullBody }>(
    '/admin/v1/registry/image/upload-remote',
    { schema: { body: RemotePullBody } },
    async (request, reply) => {
      const b = request.body;
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
        password: b.password ? options.box.seal(b.password) : null,
      };
      const task = await options.tasks.create(principalOf(request), {
        type: 'IMAGE_PULL',
        description: `pull ${params.externalName}:${params.externalTag} from ${params.externalUrl} as ${params.internalName}:${params.internalTag}`,
        params,
        scope: { companyId: null, projectId: null },
        devices: [null],
        deadlineSeconds: 3600,
      });
      return reply.status(202).send(task);
    },
  );
}

export const registryModule: ManagerModule<'registry'> = {
  name: 'registry',
  requires: ['admin', 'tasks'],
  start(ctx) {
    const tasks = ctx.module('tasks');
    const box = SecretBox.forDataDir(ctx.dataDir);
    tasks.register({
      type: 'IMAGE_PULL',
      description: 'pull an image from an external registry (recorded; see docs/manager.md)',
      publicParams: (p: PullParams) => ({ ...p, password: p.password ? '********' : null }),
      run: async (ctx) => {
        await ctx.markSent();
        return pull(box, ctx.task.params as PullParams);
      },
    });
    return { tasks, box };
  },
  mount: (ctx, api) => ctx.module('admin').app.register(registryRoutes, api),
};
