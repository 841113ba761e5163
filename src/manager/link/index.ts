/** The edge links of the manager: the hub of live links, forwarding between manager processes. */
export { LinkHub, type LinkSignIn } from './hub.js';
export type { SocketRequest } from './sockets.js';
export { LinkPeers, PEER_HEADER } from './peers.js';
export { linkMigrations } from './migrations/index.js';
export { linkRoutes, peerRoutes } from './routes.js';
export { linkModule } from './module.js';
