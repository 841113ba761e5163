/** Configuration templates of the manager, applied to many edges as tasks. */
export { templatesModule } from './module.js';
export { TemplateService } from './service.js';
