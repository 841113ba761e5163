/** CA certificates of the manager instance, synchronised to the edges' trust stores. */
export { certificatesModule } from './module.js';
export { CertificateService, CA_MAX_CERTIFICATES, CA_SYNC_TASK } from './service.js';
