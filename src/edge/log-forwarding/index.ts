/** Log forwarding: the edge's log entries to syslog (UDP, TCP, TLS) or HTTP, through a disk queue. */
export { logForwardingModule } from './module.js';
export { LogForwardingService } from './service.js';
export type { ForwardingConfig, ForwardingTarget } from './config.js';
export type { ForwardingStatus, ForwardingState } from './forwarder.js';
