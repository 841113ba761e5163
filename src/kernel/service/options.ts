/**
 * Options as TypeBox schemas. A module declares its settings beside its code
 * (`<module>/options.ts`), as a `Type.Object` keyed by the camelCase config key, each property
 * built by `Option.*`; the shell merges the shell's options and the modules' in list order. One
 * schema gives the command-line flag (`--datahub-port`, the key in kebab-case), the environment
 * variable (`MILLWRIGHT_EDGE_DATAHUB_PORT`), the config-file key (`datahub-port`), `--help`, the
 * generated tables of `docs/configuration.md`, and the type of `ctx.config` (`Static<...>`).
 *
 * Loading and validation stay in `kernel/config.ts` (`loadConfig`), which reads the specs made
 * here by `optionSpecs`.
 */
import {
  Type,
  type Static,
  type TBoolean,
  type TInteger,
  type TLiteral,
  type TObject,
  type TOptional,
  type TString,
  type TUnion,
} from '@sinclair/typebox';
import { defaultDataDir, type OptionSpec, type OptionType } from '../config.js';

/** The option metadata every `Option.*` schema carries beside its JSON-schema keywords. */
const OPTION = 'x-option';

interface OptionMeta {
  description: string;
  /** Never echoed in messages or logs; its default is not shown in `--help`. */
  secret?: boolean;
}

interface Stored {
  type: OptionType;
  secret: boolean;
}

function meta(type: OptionType, m: OptionMeta): Record<string, unknown> {
  const stored: Stored = { type, secret: m.secret ?? false };
  return { description: m.description, [OPTION]: stored };
}

/** Builders of option schemas: each is a TypeBox schema with the option's type, range and default. */
export const Option = {
  int(m: OptionMeta & { default: number; minimum: number; maximum: number }): TInteger {
    return Type.Integer({ ...meta('int', m), default: m.default, minimum: m.minimum, maximum: m.maximum });
  },
  /** A TCP or UDP port (0: any free one). */
  port(m: OptionMeta & { default: number }): TInteger {
    return Option.int({ ...m, minimum: 0, maximum: 65535 });
  },
  bool(m: OptionMeta & { default: boolean }): TBoolean {
    return Type.Boolean({ ...meta('bool', m), default: m.default });
  },
  string(m: OptionMeta & { default: string }): TString {
    return Type.String({ ...meta('string', m), default: m.default });
  },
  /** A file or directory: resolved to an absolute path when loaded. */
  path(m: OptionMeta & { default: string }): TString {
    return Type.String({ ...meta('path', m), default: m.default });
  },
  enum<const V extends readonly string[]>(
    values: V,
    m: OptionMeta & { default: V[number] },
  ): TUnion<TLiteral<V[number]>[]> {
    const literals = values.map((v: V[number]) => Type.Literal(v));
    return Type.Union(literals, { ...meta('enum', m), default: m.default, enum: [...values] });
  },
  /** Options without a default: absent unless given. */
  optional: {
    string(m: OptionMeta): TOptional<TString> {
      return Type.Optional(Type.String(meta('string', m)));
    },
    path(m: OptionMeta): TOptional<TString> {
      return Type.Optional(Type.String(meta('path', m)));
    },
    url(m: OptionMeta): TOptional<TString> {
      return Type.Optional(Type.String(meta('url', m)));
    },
  },
};

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * The loader's specs of a schema's options, in declaration order; `group` is the heading they
 * take in `--help` and in the docs (a module's name, or "common").
 */
export function optionSpecs(schema: TObject, group?: string): OptionSpec[] {
  const out: OptionSpec[] = [];
  for (const [key, raw] of Object.entries(schema.properties)) {
    const s = raw as Record<string, unknown>;
    const stored = s[OPTION] as Stored | undefined;
    if (!stored) throw new Error(`option "${key}" is not built with Option.*`);
    const spec: OptionSpec = {
      name: kebab(key),
      type: stored.type,
      description: String(s.description ?? ''),
    };
    if (s.default !== undefined) spec.default = s.default as string | number | boolean;
    if (typeof s.minimum === 'number') spec.min = s.minimum;
    if (typeof s.maximum === 'number') spec.max = s.maximum;
    if (Array.isArray(s.enum)) spec.values = s.enum as string[];
    if (stored.secret) spec.secret = true;
    if (group) spec.group = group;
    out.push(spec);
  }
  return out;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the standard union-to-intersection trick needs a distributive `any`
type UnionToIntersection<U> = (U extends any ? (x: U) => void : never) extends (x: infer I) => void
  ? I
  : never;

/** The config of modules with options `O1 | O2 | ...` (each module's `options` schema) as one object type. */
export type ModuleOptions<L extends readonly { options?: TObject | undefined }[]> = UnionToIntersection<
  {
    [K in keyof L]: L[K] extends { options?: infer O } ? (O extends TObject ? Static<O> : object) : object;
  }[number]
>;

/** No options: the default of a module that has none. */
export type NoOptions = TObject<Record<never, never>>;

/**
 * The options of every service's shell: listening, TLS, the data directory and database, the log,
 * shutdown and the HTTP server's timeouts. Each service gives its own defaults and texts where
 * they differ.
 */
export function shellOptions(service: {
  name: string;
  port: number;
  portDescription: string;
  httpDescription?: string;
  tlsCertDescription?: string;
  databaseDescription: string;
}) {
  return Type.Object({
    port: Option.port({ default: service.port, description: service.portDescription }),
    host: Option.string({ default: '0.0.0.0', description: 'address to listen on' }),
    dataDir: Option.path({
      default: defaultDataDir(service.name),
      description: 'directory of the database, logs and certificate',
    }),
    http: Option.bool({
      default: false,
      description: service.httpDescription ?? 'serve plain HTTP (only behind a TLS-terminating proxy)',
    }),
    tlsCert: Option.optional.path({
      description: service.tlsCertDescription ?? 'PEM certificate to serve instead of the self-signed one',
    }),
    tlsKey: Option.optional.path({ description: 'PEM private key of --tls-cert' }),
    databaseUrl: Option.optional.url({ secret: true, description: service.databaseDescription }),
    logLevel: Option.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], {
      default: 'info',
      description: 'lowest level logged (silent: nothing, not even in the log store)',
    }),
    logFormat: Option.enum(['auto', 'pretty', 'json', 'none'], {
      default: 'auto',
      description:
        'log lines on standard output: pretty (for people), json (for services and log collectors), auto (pretty on a terminal, else json), none (the log store only)',
    }),
    logRetentionEntries: Option.int({
      minimum: 1000,
      maximum: 100_000_000,
      default: 100_000,
      description: 'log entries kept at most',
    }),
    logRetentionDays: Option.int({
      minimum: 1,
      maximum: 3650,
      default: 7,
      description: 'days log entries are kept at most',
    }),
    shutdownTimeout: Option.int({
      minimum: 0,
      maximum: 600_000,
      default: 10_000,
      description: 'milliseconds in-flight requests get to finish at shutdown',
    }),
    ...HTTP_OPTIONS.properties,
  });
}

/** The HTTP server's limits (every service, and the manager's admin listener). */
export const HTTP_OPTIONS = Type.Object({
  httpHeadersTimeout: Option.int({
    minimum: 100,
    maximum: 600_000,
    default: 20_000,
    description:
      'milliseconds a connection gets to finish its TLS handshake and send the complete headers of a request',
  }),
  httpRequestTimeout: Option.int({
    minimum: 100,
    maximum: 3_600_000,
    default: 300_000,
    description: 'milliseconds a client gets to send one whole request, body included',
  }),
  httpKeepAliveTimeout: Option.int({
    minimum: 100,
    maximum: 600_000,
    default: 10_000,
    description: 'milliseconds an idle keep-alive connection is kept open between requests',
  }),
  httpIdleTimeout: Option.int({
    minimum: 100,
    maximum: 3_600_000,
    default: 120_000,
    description:
      'milliseconds a connection may stay silent (neither side sends) before it is closed; WebSockets excepted',
  }),
  httpMaxConnections: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 25_000,
    description: 'HTTP(S) connections open at once; beyond, new connections are closed at once',
  }),
});

/** The GraphQL limits: only on services that mount GraphQL (`ServiceDefinition.graphql`). */
export const GRAPHQL_OPTIONS = Type.Object({
  graphqlMaxQueryBytes: Option.int({
    minimum: 1024,
    maximum: 16 * 1024 * 1024,
    default: 64 * 1024,
    description: 'largest GraphQL query document, bytes (refused before parsing)',
  }),
  graphqlMaxAliases: Option.int({
    minimum: 1,
    maximum: 100_000,
    default: 100,
    description: 'most aliases in one GraphQL document',
  }),
  graphqlMaxFields: Option.int({
    minimum: 1,
    maximum: 100_000,
    default: 500,
    description: 'most fields written in one GraphQL document (__typename included)',
  }),
  graphqlCacheBytes: Option.int({
    minimum: 1024 * 1024,
    maximum: 16 * 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    description: 'memory for the parsed and compiled GraphQL query caches of each endpoint, bytes',
  }),
});

export type HttpConfig = Static<typeof HTTP_OPTIONS>;
export type GraphqlConfig = Static<typeof GRAPHQL_OPTIONS>;
export type ShellConfig = Static<ReturnType<typeof shellOptions>> & Partial<GraphqlConfig>;

/**
 * Every option of a service, as the loader's specs: the shell's, then each module's in list
 * order (grouped under the module's name for `--help` and the docs).
 */
export function serviceOptionSpecs(definition: {
  label: string;
  options: TObject;
  modules: readonly { name: string; options?: TObject | undefined }[];
}): OptionSpec[] {
  const specs = optionSpecs(definition.options, definition.label);
  const names = new Set(specs.map((s) => s.name));
  for (const module of definition.modules) {
    if (!module.options) continue;
    for (const spec of optionSpecs(module.options, `${definition.label}, ${module.name} module`)) {
      if (names.has(spec.name))
        throw new Error(`option "${spec.name}" of module "${module.name}" is declared twice`);
      names.add(spec.name);
      specs.push(spec);
    }
  }
  return specs;
}
