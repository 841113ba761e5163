/** Fleet twins (DT2): twin models of a company, deployed to the edges under a hierarchy branch. */
export { twinsModule } from './module.js';
export { Dt2Service } from './service.js';
