/**
 * Route schemas compiled on a route's first use, not at start.
 *
 * Fastify compiles every route's validators (Ajv) and response serializers (fast-json-stringify)
 * when the app gets ready. An edge mounts a few hundred routes, most of which a given process
 * never serves, and that compilation was the largest single cost of a start after module loading
 * (a profile of `test/e2e/edge-auth.test.ts`: 7.5 of its 27.7 s of CPU, four edge starts). Here
 * each compiler hands Fastify a small function that compiles the real one when it is first
 * called and then delegates to it: the same compilers, with the same options, only later.
 *
 * What changes for a route: its first request pays its compilation (a few milliseconds). A schema
 * that does not compile fails that request with a 500 instead of failing the start:
 * `compileAllSchemas` compiles every pending one, and the test suite calls it on every service
 * (test/kernel/lazy-schemas.test.ts), so such a schema cannot land.
 */
import type { FastifyInstance, FastifySchemaValidationError, FastifyServerOptions } from 'fastify';
import { createRequire } from 'node:module';

/** What Fastify hands a validator compiler (its `RouteDefinition`, with the route's part). */
interface ValidatorRoute {
  method: string;
  url: string;
  httpPart?: string;
}

type Validate = ((data: unknown, cxt?: unknown) => boolean) & {
  errors?: FastifySchemaValidationError[] | null;
  schemaEnv?: unknown;
};
type Serialize = (data: unknown) => string;
/** Fastify's `schemaController.compilersFactory`, both builders present. */
type CompilersFactory = Required<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>
>;
type BuildValidator = CompilersFactory['buildValidator'];
type BuildSerializer = CompilersFactory['buildSerializer'];

// Fastify's own default compilers (its dependencies, at the versions it pins), resolved from
// Fastify's package so that they are exactly the ones it would use.
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'));
const ajvCompiler = fastifyRequire('@fastify/ajv-compiler') as () => BuildValidator;
const serializerCompiler = fastifyRequire('@fastify/fast-json-stringify-compiler') as () => BuildSerializer;

/** The compilations not yet done, per app: `compileAllSchemas` runs them. */
const pending = new WeakMap<FastifyInstance, Set<() => void>>();

/**
 * Fastify's `schemaController.compilersFactory`: the default compilers, each compilation deferred
 * to the first call. `adopt(app)` lets `compileAllSchemas(app)` find the app's pending ones.
 */
export function lazySchemaCompilers(): CompilersFactory & { adopt(app: FastifyInstance): void } {
  const waiting = new Set<() => void>();
  const buildValidator = ajvCompiler();
  const buildSerializer = serializerCompiler();
  const warmed = new WeakSet<object>();
  return {
    buildValidator(externalSchemas, options) {
      const compile = buildValidator(externalSchemas, options);
      if (!warmed.has(compile)) {
        warmed.add(compile);
        warmValidatorCompiler(compile);
      }
      return (route) => {
        const r = route as ValidatorRoute;
        // Fastify normalises a header schema (names in lower case, and more) only for its own
        // compiler, which this one replaces: no route of Millwright declares one.
        if (r.httpPart === 'headers') {
          throw new Error(`${r.method} ${r.url}: header schemas are not supported; check headers in a hook`);
        }
        // Fastify's type wants Ajv's whole ValidateFunction; it calls it and reads `errors` and
        // `schemaEnv`, which the wrapper has.
        const validate = lazyValidator(() => compile(route) as unknown as Validate, waiting);
        return validate as unknown as ReturnType<typeof compile>;
      };
    },
    buildSerializer(externalSchemas, options) {
      const compile = buildSerializer(externalSchemas, options);
      return (route) => lazySerializer(() => compile(route) as Serialize, waiting);
    },
    adopt(app: FastifyInstance): void {
      pending.set(app, waiting);
    },
  };
}

/**
 * Compiles one small schema with a new Ajv instance (Fastify builds one per set of shared schemas
 * and options; an edge has one), which makes Ajv compile its meta-schema (JSON Schema draft-07,
 * against which it checks every schema it compiles) and warms its code generator: 65-95 ms of CPU
 * the first time in a process, 1-5 ms for each compilation after it. Fastify builds the compilers
 * while the app boots, so this runs before the service listens; left to the first validated
 * request, it was a stretch of 30-130 ms of the main thread just after the ready line
 * (test/e2e/opcua-start.test.ts). Not a route's schema: nothing is registered by it.
 */
function warmValidatorCompiler(compile: ReturnType<BuildValidator>): void {
  compile({
    schema: { type: 'object', properties: { warm: { type: 'string' } } },
    method: 'GET',
    url: '/',
    httpPart: 'querystring',
  } as Parameters<ReturnType<BuildValidator>>[0]);
}

/** How many of the app's validators and serializers are not compiled yet. */
export function pendingSchemas(app: FastifyInstance): number {
  return pending.get(app)?.size ?? 0;
}

/** Compiles every schema of the app not compiled yet; throws the first compilation error. */
export function compileAllSchemas(app: FastifyInstance): number {
  const waiting = pending.get(app);
  if (!waiting) return 0;
  const all = [...waiting];
  for (const run of all) run();
  return all.length;
}

/**
 * `compile` run at most once, at the first `get()` (or by `compileAllSchemas`, through `waiting`,
 * which holds it until then).
 */
function deferred<T>(compile: () => T, waiting: Set<() => void>): () => T {
  let real: T | undefined;
  const get = (): T => {
    if (real === undefined) {
      real = compile();
      waiting.delete(get);
    }
    return real;
  };
  waiting.add(get);
  return get;
}

function lazyValidator(compile: () => Validate, waiting: Set<() => void>): Validate {
  const real = deferred(compile, waiting);
  const validate: Validate = (data, cxt) => {
    const fn = real();
    const ok = fn(data, cxt);
    validate.errors = fn.errors;
    return ok;
  };
  // Fastify passes the parent object (so that Ajv can coerce or default a root value) only to a
  // function that has `schemaEnv`, as Ajv's do: every compiled validator here is Ajv's.
  validate.schemaEnv = true;
  return validate;
}

function lazySerializer(compile: () => Serialize, waiting: Set<() => void>): Serialize {
  const real = deferred(compile, waiting);
  return (data) => real()(data);
}
