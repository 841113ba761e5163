/** The manager's audit trail: the module, and the service the CLI records its changes through. */
export { auditModule } from './module.js';
export { AuditService, hashOf, type AuditInput, type AuditOrigin, type VerifyResult } from './service.js';
export { AuditRepository, type LegacyRow } from './repository.js';
export { actionOf } from './hook.js';
export { PDF_MAX_RECORDS } from './export.js';
