/**
 * Digital twins on the edge's seam: `/digital-twins`, publishing on the DataHub, and the `twins`
 * section of configuration templates.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Database } from '../../kernel/db/index.js';
import { mountGraphql } from '../../kernel/graphql.js';
import { LIST_SDL } from '../../kernel/paging.js';
import type { DataHub } from '../datahub/index.js';
import type { EdgeModule } from '../modules.js';
import { ExpressionSandbox, type ExpressionLimits } from './expressions.js';
import { twinsOptions } from './options.js';
import { twinsConfigSection } from './config-section.js';
import { twinsMigrations } from './migrations/index.js';
import { TwinsRepository } from './repository.js';
import { resolvers, type TwinsContext } from './resolvers.js';
import { TwinRuntime, type UnsSource } from './runtime.js';
import { TwinsService, type TwinsLimits } from './service.js';

export const TWINS_PATH = '/digital-twins';

/** The schema (SDL) of `/digital-twins`, with the kernel's list input types. */
export function twinsSchema(): string {
  return readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8') + LIST_SDL;
}

export interface TwinsApi {
  service: TwinsService;
  runtime: TwinRuntime;
  hub: DataHub;
  uns: UnsSource | null;
  /** Concurrent `DataAccess` and `PlaygroundMessages` streams: open now, and the most allowed. */
  streams: { open: number; max: number };
  playground: { maxSamples: number; maxMessages: number; maxDurationMs: number };
  /** Where every transformation is evaluated: worker threads, bounded (see expressions.ts). */
  expressions: ExpressionSandbox;
  close(): Promise<void>;
}

export interface TwinsOptions {
  database: Database;
  hub: DataHub;
  logger?: Logger | undefined;
  uns?: (UnsSource & { close(): Promise<void> }) | null;
  limits?: Partial<TwinsLimits>;
  maxStreams?: number;
  /** Largest payload of an instance, bytes as JSON (the DataHub's maximum payload). */
  maxPayloadBytes?: number;
  /** Bounds of the expression sandbox (defaults: DEFAULT_EXPRESSION_LIMITS). */
  expressionLimits?: Partial<ExpressionLimits>;
}

export async function createTwins(options: TwinsOptions): Promise<TwinsApi> {
  const service = await TwinsService.load(new TwinsRepository(options.database), options.limits);
  const uns = options.uns ?? null;
  const expressions = new ExpressionSandbox(options.expressionLimits);
  // The worker thread starts with the first transformation or playground run, not with the edge:
  // started 200 ms after the start, its loading made an edge miss the link's heartbeats (300 ms in
  // the tests) while every other module was starting too.
  const runtime = new TwinRuntime({
    expressions,
    hub: options.hub,
    service,
    logger: options.logger,
    uns,
    maxPayloadBytes: options.maxPayloadBytes,
  });
  return {
    service,
    runtime,
    hub: options.hub,
    uns,
    streams: { open: 0, max: options.maxStreams ?? 100 },
    playground: { maxSamples: 100, maxMessages: 1000, maxDurationMs: 10 * 60_000 },
    expressions,
    async close() {
      runtime.close();
      await expressions.close();
      await uns?.close();
    },
  };
}

/** Mounts `/digital-twins` (queries, mutations, and subscriptions over its WebSocket). */
export async function mountTwins(app: FastifyInstance, twins: TwinsApi): Promise<void> {
  await mountGraphql<TwinsContext>(app, {
    path: TWINS_PATH,
    schema: twinsSchema(),
    resolvers,
    context: () => ({ twins }),
    subscriptions: true,
    maxCost: 200_000,
    // graphql-jit compiles variables of a self-referencing input type (SaveAllHierarchyRequest
    // holds Childs of its own type) into an endless loop that exhausts the heap: run uncompiled.
    jit: 0,
  });
}

declare module '../modules.js' {
  interface EdgeModules {
    twins: TwinsApi;
  }
}

export const twinsModule: EdgeModule<'twins', typeof twinsOptions> = {
  name: 'twins',
  options: twinsOptions,
  migrations: twinsMigrations,
  requires: ['datahub'],
  start: async (ctx) => {
    const c = ctx.config;
    // The MQTT client (uns-link.js and mqtt) is loaded only by an edge linked to a UNS broker.
    const uns = c.unsMqttUrl
      ? new (await import('./uns-link.js')).UnsLink({
          url: c.unsMqttUrl,
          username: c.unsUsername,
          password: c.unsPassword,
          logger: ctx.logger,
        })
      : null;
    return createTwins({
      database: ctx.database,
      hub: ctx.module('datahub').hub,
      logger: ctx.logger,
      uns,
      maxPayloadBytes: ctx.module('datahub').maxPayload,
      expressionLimits: {
        timeoutMs: c.twinsExpressionTimeout,
        maxDepth: c.twinsExpressionDepth,
        maxOutputBytes: c.twinsExpressionOutput,
        heapMb: c.twinsExpressionHeap,
        workers: c.twinsExpressionWorkers,
      },
    });
  },
  mount: (ctx, twins) => mountTwins(ctx.app, twins),
  configSection: (twins) => twinsConfigSection(twins.service),
  close: (twins) => twins.close(),
};
