/** The edge as an MCP server: `/mcp` (streamable HTTP) with tools and resources over the plant. */
export { mcpModule, type EdgeMcp } from './module.js';
export { MCP_PATH } from './routes.js';
export { Plant, mayWrite, MAX_READ_TAGS, TREE_MAX_DEVICES, TREE_MAX_TAGS } from './plant.js';
export { McpSessions, SESSION_HEADER } from './sessions.js';
