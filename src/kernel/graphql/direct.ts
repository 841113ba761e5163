/**
 * Direct answers: a query whose one root field a module named (`GraphqlMountOptions.directQueries`)
 * is answered without the GraphQL executor. The root field's resolver runs as mercurius would run
 * it, and its value is written as JSON straight from the selection: no result object per list
 * element (graphql-jit builds one, then `JSON.stringify` walks it again), and each element's text
 * is built by concatenation and written into the answer's bytes in pieces. A page of 1,000
 * registers (`/devicehub/v2` `ListRegistersFromAllDevices`) is the case it was made for.
 *
 * Only a plain document takes this path: one query operation, no fragments, no directives, no
 * arguments below the root field, no field below the root with its own resolver, no abstract
 * type; the document valid by the endpoint's own rules. Anything else, and any value the writer
 * would not write exactly as the executor (a null where the schema says non-null, a value that
 * is not a list where it says list, a resolver that throws), falls back to mercurius, which runs
 * the query again and answers it, errors included. The text is what the executor's answer
 * serialises to (test/kernel/graphql-direct.test.ts compares both).
 */
import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  getVariableValues,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  Kind,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import { ByteWriter, ELEMENTS_PER_PIECE, SPLIT_ARRAY } from '../http/json-bytes.js';
import { checkDocumentShape, checkQuerySize, type DocumentLimits } from './limits.js';

/** Documents whose plan (or whose refusal) is kept, by query text; the oldest goes first. */
export const DIRECT_PLAN_ENTRIES = 64;

/** Thrown by the writer when the executor would not answer what it writes: mercurius answers. */
class Fallback extends Error {}

/** How one value of a field is written: to a string, and for a long list into the bytes. */
interface Writer {
  text(value: unknown): string;
  bytes?: (out: ByteWriter, value: unknown) => void;
}

interface Plan {
  key: string;
  field: GraphQLField<unknown, unknown>;
  node: FieldNode;
  operation: OperationDefinitionNode;
  writer: Writer;
}

type RootResolver = (root: unknown, args: Record<string, unknown>, ctx: unknown, info: unknown) => unknown;

// eslint-disable-next-line no-control-regex -- the control characters are what JSON.stringify escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
/** What a piece written with `inPiece` may hold only if one of its strings needed an escape. */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON.stringify escapes
const ESCAPED_IN_PIECE = /[\\\u0000-\u001f\ud800-\udfff]/;
/**
 * Whether a piece of a long list is being written (`listWriter`). Inside a piece a string is
 * checked for a quote only (`indexOf`, much cheaper than a regular expression: 14,000 strings a
 * page of 1,000 registers); the piece is then scanned once for what else needs an escape (a
 * backslash, a control character, a surrogate: none of them is ever part of the JSON around the
 * strings), and written again with each string checked if it holds any. The scan also flattens
 * the piece's string, which writing it would do anyway. The writers are synchronous, so one
 * variable serves every request.
 */
let inPiece = false;

/** `JSON.stringify(s)` (see `inPiece`). */
function quote(s: string): string {
  if (inPiece) return s.indexOf('"') === -1 ? `"${s}"` : JSON.stringify(s);
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

function scalarWriter(type: GraphQLOutputType, nonNull: boolean): Writer {
  const named = getNamedType(type);
  if (!isScalarType(named) && !isEnumType(named)) throw new Fallback();
  const serialize = named.serialize.bind(named) as (v: unknown) => unknown;
  // The built-in scalars' own serialisation of the values they take as they are.
  const builtIn = isSpecifiedScalarType(named) ? named.name : '';
  const text = (v: unknown): string => {
    if (typeof v === 'string') return quote(v);
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (v === null || v === undefined) {
      if (nonNull) throw new Fallback();
      return 'null';
    }
    return JSON.stringify(v) ?? 'null';
  };
  return {
    text(value) {
      if (value === null || value === undefined) {
        if (nonNull) throw new Fallback();
        return 'null';
      }
      if (typeof value === 'string' && (builtIn === 'String' || builtIn === 'ID')) return quote(value);
      if (typeof value === 'boolean' && builtIn === 'Boolean') return value ? 'true' : 'false';
      if (typeof value === 'number' && builtIn === 'Int' && value === (value | 0)) return String(value);
      return text(serialize(value));
    },
  };
}

function objectWriter(type: GraphQLObjectType, set: SelectionSetNode, nonNull: boolean): Writer {
  const members: Array<{ prefix: string; name: string; writer: Writer | null }> = [];
  const seen = new Set<string>();
  for (const sel of set.selections) {
    if (sel.kind !== Kind.FIELD || (sel.directives?.length ?? 0) > 0 || (sel.arguments?.length ?? 0) > 0)
      throw new Fallback();
    const key = sel.alias?.value ?? sel.name.value;
    if (seen.has(key)) throw new Fallback();
    seen.add(key);
    const prefix = `${members.length === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    if (sel.name.value === '__typename') {
      members.push({ prefix, name: '', writer: null });
      continue;
    }
    const field = type.getFields()[sel.name.value];
    if (!field || field.resolve !== undefined) throw new Fallback();
    members.push({ prefix, name: field.name, writer: writerOf(field.type, sel.selectionSet) });
  }
  const typename = quote(type.name);
  return {
    text(value) {
      if (value === null || value === undefined) {
        if (nonNull) throw new Fallback();
        return 'null';
      }
      if (typeof value !== 'object') throw new Fallback();
      const source = value as Record<string, unknown>;
      let s = '';
      for (const m of members) {
        if (m.writer === null) {
          s += m.prefix + typename;
          continue;
        }
        const v = source[m.name];
        if (typeof v === 'function') throw new Fallback(); // the default resolver would call it
        s += m.prefix + m.writer.text(v);
      }
      return members.length === 0 ? '{}' : `${s}}`;
    },
    // Member by member, so that a long list among them (a page's `Registers`) goes in pieces.
    bytes(out, value) {
      if (value === null || value === undefined || typeof value !== 'object' || members.length === 0) {
        out.put(this.text(value));
        return;
      }
      const source = value as Record<string, unknown>;
      for (const m of members) {
        out.put(m.prefix);
        if (m.writer === null) {
          out.put(typename);
          continue;
        }
        const v = source[m.name];
        if (typeof v === 'function') throw new Fallback();
        if (m.writer.bytes) m.writer.bytes(out, v);
        else out.put(m.writer.text(v));
      }
      out.put('}');
    },
  };
}

/** Elements `from` to `to` of a list, comma-separated. */
function pieceOf(item: Writer, list: unknown[], from: number, to: number): string {
  let piece = '';
  for (let j = from; j < to; j++) piece += (j === from ? '' : ',') + item.text(list[j]);
  return piece;
}

function listWriter(item: Writer, nonNull: boolean): Writer {
  const items = (value: unknown): unknown[] | null => {
    if (value === null || value === undefined) {
      if (nonNull) throw new Fallback();
      return null;
    }
    if (!Array.isArray(value)) throw new Fallback();
    return value;
  };
  return {
    text(value) {
      const list = items(value);
      if (list === null) return 'null';
      let s = '[';
      for (let i = 0; i < list.length; i++) s += (i === 0 ? '' : ',') + item.text(list[i]);
      return `${s}]`;
    },
    bytes(out, value) {
      const list = items(value);
      if (list === null || list.length <= SPLIT_ARRAY) {
        out.put(this.text(value));
        return;
      }
      out.put('[');
      for (let i = 0; i < list.length; i += ELEMENTS_PER_PIECE) {
        const end = Math.min(list.length, i + ELEMENTS_PER_PIECE);
        let piece: string;
        inPiece = true;
        try {
          piece = pieceOf(item, list, i, end);
        } finally {
          inPiece = false;
        }
        if (ESCAPED_IN_PIECE.test(piece)) piece = pieceOf(item, list, i, end);
        out.put(i === 0 ? piece : `,${piece}`);
      }
      out.put(']');
    },
  };
}

function writerOf(type: GraphQLOutputType, set: SelectionSetNode | undefined): Writer {
  const nonNull = isNonNullType(type);
  const inner = getNullableType(type) as GraphQLOutputType;
  if (isListType(inner)) return listWriter(writerOf(inner.ofType as GraphQLOutputType, set), nonNull);
  if (isObjectType(inner)) {
    if (!set) throw new Fallback();
    return objectWriter(inner, set, nonNull);
  }
  if (set) throw new Fallback();
  return scalarWriter(inner, nonNull);
}

/** The plan of a document, or null when it does not take the direct path. */
function planOf(
  schema: GraphQLSchema,
  query: string,
  fields: ReadonlySet<string>,
  rules: ValidationRule[],
  limits: DocumentLimits,
): Plan | null {
  let document: DocumentNode;
  try {
    checkQuerySize(query, limits);
    document = parse(query);
    checkDocumentShape(document, limits);
  } catch {
    return null;
  }
  const [operation, ...others] = document.definitions;
  if (others.length > 0 || operation?.kind !== Kind.OPERATION_DEFINITION || operation.operation !== 'query')
    return null;
  if ((operation.directives?.length ?? 0) > 0 || operation.selectionSet.selections.length !== 1) return null;
  const node = operation.selectionSet.selections[0]!;
  if (node.kind !== Kind.FIELD || (node.directives?.length ?? 0) > 0 || !fields.has(node.name.value))
    return null;
  const field = schema.getQueryType()?.getFields()[node.name.value];
  if (!field || validate(schema, document, [...specifiedRules, ...rules]).length > 0) return null;
  try {
    const writer = writerOf(field.type, node.selectionSet);
    return { key: node.alias?.value ?? node.name.value, field, node, operation, writer };
  } catch (err) {
    if (err instanceof Fallback) return null;
    throw err;
  }
}

/** A request's direct answer: its JSON bytes, or undefined (mercurius answers). */
export type DirectAnswer = (body: unknown, context: () => Promise<unknown>) => Promise<Buffer | undefined>;

/**
 * The direct answers of an endpoint: `fields` are root Query fields whose resolvers read only
 * (the query may run twice: here, then in mercurius when the writer falls back).
 */
export function directAnswers(
  schemaOf: () => GraphQLSchema,
  resolvers: Record<string, unknown> | undefined,
  fields: readonly string[],
  rules: ValidationRule[],
  limits: DocumentLimits,
): DirectAnswer {
  const names = new Set(fields);
  const plans = new Map<string, Plan | null>();
  return async (body, context) => {
    if (typeof body !== 'object' || body === null) return undefined;
    const { query, variables, operationName } = body as Record<string, unknown>;
    if (typeof query !== 'string') return undefined;
    let plan = plans.get(query);
    if (plan === undefined) {
      plan = planOf(schemaOf(), query, names, rules, limits);
      if (plans.size >= DIRECT_PLAN_ENTRIES) plans.delete(plans.keys().next().value!);
      plans.set(query, plan);
    }
    if (plan === null) return undefined;
    // An operationName must name the document's one operation (mercurius answers otherwise).
    if (operationName !== undefined && operationName !== null && operationName !== plan.operation.name?.value)
      return undefined;
    const resolve = resolvers?.[plan.field.name] as RootResolver | undefined;
    if (typeof resolve !== 'function') return undefined;
    const vars = getVariableValues(
      schemaOf(),
      plan.operation.variableDefinitions ?? [],
      (variables ?? {}) as Record<string, unknown>,
    );
    if (vars.errors || !vars.coerced) return undefined;
    try {
      const args = getArgumentValues(plan.field, plan.node, vars.coerced);
      const value = await resolve(undefined, args, await context(), undefined);
      const out = new ByteWriter();
      out.put(`{"data":{${JSON.stringify(plan.key)}:`);
      if (plan.writer.bytes) plan.writer.bytes(out, value);
      else out.put(plan.writer.text(value));
      out.put('}}');
      return out.bytes();
    } catch {
      return undefined; // mercurius runs it again and answers, errors included
    }
  };
}
