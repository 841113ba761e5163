/** Thin translation between the history's GraphQL endpoint (`/history/graphql`) and the service. */
import type { IResolvers } from 'mercurius';
import type { GraphqlContext } from '../../kernel/graphql.js';
import { parseListInput } from '../../kernel/paging.js';
import { VALUES_LIST } from './routes.js';
import type { HistoryService, HistoryValue } from './service.js';

export interface HistoryContext {
  history: HistoryService;
}

type Ctx = GraphqlContext & HistoryContext;

interface ValuesRequest {
  Tags: string[];
  From: number;
  To: number;
  Limit?: number | null;
  Offset?: number | null;
}
interface AggregateRequest {
  Tags: string[];
  From: number;
  To: number;
  Points?: number | null;
  Bucket?: number | null;
}
interface LastRequest {
  Tags: string[];
  At?: number | null;
}

const valueOut = (v: HistoryValue) => ({
  Tag: v.tag,
  Timestamp: v.ts,
  Value: typeof v.value === 'number' ? v.value : null,
  Text: typeof v.value === 'string' ? v.value : null,
});

export const resolvers: IResolvers<never, Ctx> = {
  Query: {
    HistoryValues: async (_r: never, { input }: { input: ValuesRequest }, ctx: Ctx) => {
      const spec = parseListInput(
        { Limit: input.Limit ?? undefined, Offset: input.Offset ?? undefined },
        VALUES_LIST,
      );
      const page = await ctx.history.raw({
        tags: input.Tags,
        from: input.From,
        to: input.To,
        limit: spec.limit,
        offset: spec.offset,
      });
      return { Items: page.items.map(valueOut), Total: page.total };
    },
    HistoryAggregate: async (_r: never, { input }: { input: AggregateRequest }, ctx: Ctx) => {
      const out = await ctx.history.aggregate({
        tags: input.Tags,
        from: input.From,
        to: input.To,
        points: input.Points ?? undefined,
        bucketMs: input.Bucket ?? undefined,
      });
      return {
        BucketMs: out.bucketMs,
        Series: out.series.map((s) => ({
          Tag: s.tag,
          Buckets: s.buckets.map((b) => ({
            Timestamp: b.ts,
            First: b.first,
            Last: b.last,
            Min: b.min,
            Max: b.max,
            Mean: b.mean,
            Count: b.count,
            TimeWeightedMean: b.twa,
          })),
        })),
      };
    },
    HistoryLast: async (_r: never, { input }: { input: LastRequest }, ctx: Ctx) =>
      (await ctx.history.last(input.Tags, input.At ?? Date.now())).map(valueOut),
    HistoryTags: (_r: never, _a: unknown, ctx: Ctx) => ctx.history.tags(),
    HistoryStatus: async (_r: never, _a: unknown, ctx: Ctx) => {
      const s = await ctx.history.status();
      return {
        Engine: s.engine,
        Bytes: s.bytes,
        Values: s.values,
        Tags: s.tags,
        Oldest: s.oldest,
        Newest: s.newest,
        Received: s.received,
        Kept: s.kept,
        Dropped: s.dropped,
      };
    },
  },
};
