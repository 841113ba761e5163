/** The edge's log query module: `GET /logs/query` over the kernel's embedded log store. */
export { logsRoutes, toQueryParams, type LogsRoutesOptions } from './routes.js';
export {
  LogQuerySchema,
  LogEntrySchema,
  LogLevelSchema,
  LogQueryReplySchema,
  type LogQuery,
  type LogEntry,
  type LogQueryReply,
} from './schemas.js';
export { logsModule } from './module.js';
