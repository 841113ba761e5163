/** The edge's trust store: CA certificates synchronised by the manager, for outbound TLS and the OPC UA client. */
export { trustModule } from './module.js';
export { TrustStore, TRUST_MAX_CERTIFICATES } from './service.js';
export type { TrustedCertificate, TrustSet } from './repository.js';
