export { CleanupStack } from './cleanup.js';
export { PortPolicy, type PortPolicyOptions } from './ports.js';
export type { ModuleContext, ModuleList, ServiceModule } from './module.js';
export {
  APPLY_MODES,
  isSecretValue,
  type ApplyMode,
  type ConfigSection,
  type SecretValue,
  type SectionApplyContext,
  type SectionDiff,
  type SectionIssue,
} from './config-section.js';
export {
  ServiceShell,
  mountingModule,
  openServiceDatabase,
  type ServiceDefinition,
  type ShellOptions,
  serviceOptionSpecs,
  serviceConfigWith,
} from './shell.js';
export {
  Option,
  GRAPHQL_OPTIONS,
  HTTP_OPTIONS,
  shellOptions,
  optionSpecs,
  type NoOptions,
  type ModuleOptions,
  type ShellConfig,
  type HttpConfig,
  type GraphqlConfig,
} from './options.js';
