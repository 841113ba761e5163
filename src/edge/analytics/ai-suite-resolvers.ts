/** Thin translation between `/analytics/v3` (ai-suite.graphql) and the AI suite on disk. */
import { open } from 'node:fs/promises';
import { badRequest, forbidden } from '../../kernel/errors.js';
import type { AuthContext } from '../../kernel/http/auth-types.js';
import { checkKind, type AISuite, type FileKind, type SessionView, type SuiteFile } from './ai-suite.js';
import { exportSuite, importSuite } from './ai-suite-archive.js';
import { listProviderModels } from './providers.js';

export interface AISuiteContext {
  suite: AISuite;
  /** Where the module is mounted (`/analytics/v3`): upload and download paths are under it. */
  base: string;
  providerTimeoutMs: number;
  /** The caller (GraphQL's context). */
  auth?: AuthContext | null;
}

/** One `GetAISuiteFileContent` answer at most, bytes. */
export const MAX_CONTENT_BYTES = 1024 * 1024;

const iso = (ms: number) => new Date(ms).toISOString();

export const sessionOut = (s: SessionView, base: string) => ({
  ID: s.id,
  Kind: s.kind,
  Name: s.name,
  Size: s.size,
  SHA256: s.sha256,
  Offset: s.offset,
  State: s.state,
  UploadPath: `${base}/uploads/${s.id}`,
  CreatedAt: iso(s.createdAt),
  UpdatedAt: iso(s.updatedAt),
  ExpiresAt: iso(s.expiresAt),
});

const fileOut = (f: Pick<SuiteFile, 'kind' | 'name' | 'size'> & { updatedAt?: number }) => ({
  Kind: f.kind,
  Name: f.name,
  Size: f.size,
  UpdatedAt: iso(f.updatedAt ?? Date.now()),
});

const MODEL: readonly FileKind[] = ['model'];
const FILES: readonly FileKind[] = ['model', 'prompt', 'tool', 'provider'];

type Args<T> = { input: T };
type IdIn = Args<{ ID: string }>;
interface CreateIn {
  Kind?: string;
  Name: string;
  Size: number;
  SHA256: string;
}

/** Reads `length` bytes of a file from `offset`: as UTF-8 when they are text, else base64. */
async function content(suite: AISuite, kind: FileKind, name: string, offset: number, length: number) {
  const f = await suite.file(kind, name);
  const fh = await open(suite.filePath(kind, name), 'r');
  try {
    const n = Math.max(0, Math.min(length, f.size - offset));
    const buf = Buffer.alloc(n);
    if (n > 0) await fh.read(buf, 0, n, offset);
    const text = !buf.includes(0) && Buffer.from(buf.toString('utf8'), 'utf8').equals(buf);
    return {
      Kind: kind,
      Name: name,
      Size: f.size,
      Offset: offset,
      Encoding: text ? 'utf8' : 'base64',
      Content: text ? buf.toString('utf8') : buf.toString('base64'),
      Truncated: offset + n < f.size,
    };
  } finally {
    await fh.close();
  }
}

export const aiSuiteResolvers = {
  Query: {
    GetModelUploadSession: (_r: unknown, { input }: IdIn, ctx: AISuiteContext) =>
      sessionOut(ctx.suite.view(input.ID, MODEL), ctx.base),
    GetAISuiteFiles: async (
      _r: unknown,
      a: { input?: { Kind?: string | null } | null },
      ctx: AISuiteContext,
    ) =>
      (await ctx.suite.files(a.input?.Kind ? (checkKind(a.input.Kind) as FileKind) : undefined)).map(fileOut),
    GetAISuiteFileContent: (
      _r: unknown,
      { input }: Args<{ Kind: string; Name: string; Offset?: number | null; Length?: number | null }>,
      ctx: AISuiteContext,
    ) => {
      const offset = input.Offset ?? 0;
      const length = input.Length ?? MAX_CONTENT_BYTES;
      if (!Number.isSafeInteger(offset) || offset < 0) throw badRequest('Offset must be a whole number ≥ 0');
      if (length < 0 || length > MAX_CONTENT_BYTES)
        throw badRequest(`Length must be from 0 to ${MAX_CONTENT_BYTES}`);
      const kind = checkKind(input.Kind) as FileKind;
      if (kind === 'provider' && ctx.auth?.role === 'viewer')
        throw forbidden('a provider file may hold credentials (apiKey): a viewer cannot read it');
      return content(ctx.suite, kind, input.Name, offset, length);
    },
    ListProviderModels: async (_r: unknown, { input }: Args<{ Provider: string }>, ctx: AISuiteContext) =>
      (await listProviderModels(ctx.suite, input.Provider, ctx.providerTimeoutMs)).map((m) => ({
        ID: m.id,
        OwnedBy: m.ownedBy,
        Created: m.created,
        Size: m.size,
      })),
  },
  Mutation: {
    CreateModelUploadSession: async (_r: unknown, { input }: Args<CreateIn>, ctx: AISuiteContext) =>
      sessionOut(
        await ctx.suite.createSession({
          kind: 'model',
          name: input.Name,
          size: input.Size,
          sha256: input.SHA256,
        }),
        ctx.base,
      ),
    CreateAISuiteUploadSession: async (_r: unknown, { input }: Args<CreateIn>, ctx: AISuiteContext) =>
      sessionOut(
        await ctx.suite.createSession({
          kind: input.Kind,
          name: input.Name,
          size: input.Size,
          sha256: input.SHA256,
        }),
        ctx.base,
      ),
    ResumeModelUploadSession: async (_r: unknown, { input }: IdIn, ctx: AISuiteContext) =>
      sessionOut(await ctx.suite.resume(input.ID, MODEL), ctx.base),
    ResumeAISuiteUploadSession: async (_r: unknown, { input }: IdIn, ctx: AISuiteContext) =>
      sessionOut(await ctx.suite.resume(input.ID), ctx.base),
    CloseModelUploadSession: async (_r: unknown, { input }: IdIn, ctx: AISuiteContext) => {
      const { session, file } = await ctx.suite.close(input.ID, MODEL);
      return { Session: sessionOut(session, ctx.base), File: fileOut(file) };
    },
    CloseAISuiteUploadSession: async (_r: unknown, { input }: IdIn, ctx: AISuiteContext) => {
      const { session, file } = await ctx.suite.close(input.ID, FILES);
      return { Session: sessionOut(session, ctx.base), File: fileOut(file) };
    },
    DeleteAISuiteFile: (_r: unknown, { input }: Args<{ Kind: string; Name: string }>, ctx: AISuiteContext) =>
      ctx.suite.deleteFile(checkKind(input.Kind) as FileKind, input.Name),
    ExportAISuite: async (_r: unknown, _a: unknown, ctx: AISuiteContext) => {
      const e = await exportSuite(ctx.suite);
      return {
        ID: e.id,
        Size: e.size,
        SHA256: e.sha256,
        Files: e.files,
        DownloadPath: `${ctx.base}/ai-suite/exports/${e.id}`,
      };
    },
    ImportAISuite: async (_r: unknown, { input }: Args<{ SessionID: string }>, ctx: AISuiteContext) => ({
      Files: (await ctx.suite.takeArchive(input.SessionID, (path) => importSuite(ctx.suite, path))).map(
        fileOut,
      ),
    }),
  },
};
