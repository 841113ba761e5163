/** The asset hierarchy of each company: templates, nodes, branch permissions, CSV import and export. */
export { hierarchyModule, type Hierarchy } from './module.js';
export { HierarchyService, type TemplateView, type HierarchyFleet } from './service.js';
export { NodeService, type NodeView } from './nodes.js';
export { GrantService, type GrantView } from './grants.js';
export { exportCsv, importCsv, parseCsv, CSV_COLUMNS } from './csv.js';
export { HierarchyRepository } from './repository.js';
