/**
 * Limits checked before a GraphQL operation runs: depth and static cost (a validation rule, whose
 * verdict mercurius caches per query text).
 */
import {
  getNamedType,
  getNullableType,
  GraphQLError,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
} from 'graphql';
import { AppError, ERRORS } from '../errors.js';

export const DEFAULT_MAX_DEPTH = 12;
export const DEFAULT_MAX_COST = 5000;
/** The factor of a list field whose size no `Limit`/`limit`/`first` argument states. */
export const DEFAULT_LIST_SIZE = 10;
/**
 * Introspection is exempt from the depth and cost limits (the standard introspection query is
 * 13 deep), but lists inside it may nest only this deep: the standard query needs 3
 * (`types { fields { args } }`); `types { fields { type { fields ... } } }` is how introspection
 * is turned into an amplification attack.
 */
export const MAX_INTROSPECTION_LIST_NESTING = 3;

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  defaultListSize: number;
}

export interface QueryMeasure {
  /** Deepest field nesting; top-level fields are depth 1. Introspection fields do not count. */
  depth: number;
  /**
   * Static cost: every field costs 1, plus the cost of its selection; for a list field, the cost
   * of its selection is multiplied by the list's size: its `Limit`/`limit`/`first` argument (also
   * found inside an input object argument, `input: { Limit: 50 }`), else the size argument of
   * the enclosing field (`ListDevices(input: { Limit: 50 }) { Items { ... } }`), else the default
   * list size. A variable counts with its default value, or the default list size.
   */
  cost: number;
  /** Deepest nesting of lists inside introspection fields. */
  introspectionListNesting: number;
}

const LIMIT_ARGUMENTS = new Set(['Limit', 'limit', 'first']);

/**
 * A validation rule enforcing the depth and cost limits, with messages such as
 * `query depth 15 exceeds the maximum of 12` and `query cost 10101 exceeds the maximum of 5000`.
 * It only reads the document, so mercurius may cache its verdict per query text.
 */
export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  return (context: ValidationContext) => ({
    OperationDefinition(node: OperationDefinitionNode) {
      const measure = measureOperation(
        context.getSchema(),
        node,
        (name) => context.getFragment(name),
        limits,
      );
      const kind = node.operation;
      if (measure.depth > limits.maxDepth) {
        context.reportError(
          new GraphQLError(`${kind} depth ${measure.depth} exceeds the maximum of ${limits.maxDepth}`, {
            nodes: [node],
            extensions: { code: ERRORS.queryTooDeep.code },
          }),
        );
      }
      if (measure.cost > limits.maxCost) {
        context.reportError(
          new GraphQLError(`${kind} cost ${measure.cost} exceeds the maximum of ${limits.maxCost}`, {
            nodes: [node],
            extensions: { code: ERRORS.queryTooCostly.code },
          }),
        );
      }
      if (measure.introspectionListNesting > MAX_INTROSPECTION_LIST_NESTING) {
        context.reportError(
          new GraphQLError(
            `introspection nests lists ${measure.introspectionListNesting} deep, the maximum is ${MAX_INTROSPECTION_LIST_NESTING}`,
            { nodes: [node], extensions: { code: ERRORS.queryTooCostly.code } },
          ),
        );
      }
    },
  });
}

/** Measures one operation of a document (fragments expanded, each fragment measured once). */
export function measureOperation(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  getFragment: (name: string) => FragmentDefinitionNode | null | undefined,
  limits: Pick<QueryLimits, 'defaultListSize'>,
): QueryMeasure {
  const variableDefaults = new Map<string, number>();
  for (const definition of operation.variableDefinitions ?? []) {
    const value = definition.defaultValue;
    if (value?.kind === Kind.INT) variableDefaults.set(definition.variable.name.value, Number(value.value));
  }
  const fragmentMeasures = new Map<string, { depth: number; cost: number }>();
  const fragmentNesting = new Map<string, number>();
  const visiting = new Set<string>();
  let introspectionListNesting = 0;
  const fragments: FragmentWalk = { schema, getFragment, fragmentNesting, visiting };

  const measure = (
    selectionSet: SelectionSetNode,
    parent: GraphQLNamedType | undefined,
    inheritedLimit: number | undefined,
  ): { depth: number; cost: number } => {
    let depth = 0;
    let cost = 0;
    for (const selection of selectionSet.selections) {
      let inner: { depth: number; cost: number };
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name.startsWith('__')) {
          if (selection.selectionSet) {
            const type = fieldDefinition(parent, name)?.type;
            const found = nesting(fragments, selection.selectionSet, type && getNamedType(type));
            introspectionListNesting = Math.max(introspectionListNesting, found);
          }
          // Exempt from depth, but every field costs, `__typename` included (alias bombs).
          cost += 1;
          continue;
        }
        const type = fieldDefinition(parent, name)?.type;
        const list = type !== undefined && isListType(getNullableType(type));
        const limit = limitOf(selection, variableDefaults);
        const children = selection.selectionSet
          ? measure(selection.selectionSet, type && getNamedType(type), list ? undefined : limit)
          : { depth: 0, cost: 0 };
        const factor = list ? (limit ?? inheritedLimit ?? limits.defaultListSize) : 1;
        inner = { depth: 1 + children.depth, cost: 1 + factor * children.cost };
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        inner = measure(
          selection.selectionSet,
          typeCondition(schema, selection.typeCondition?.name.value, parent),
          inheritedLimit,
        );
      } else {
        const name = selection.name.value;
        const key = `${name}\u0000${inheritedLimit ?? ''}`;
        let known = fragmentMeasures.get(key);
        if (!known) {
          const fragment = getFragment(name);
          if (!fragment || visiting.has(name)) continue; // unknown or cyclic: validation reports it
          visiting.add(name);
          known = measure(
            fragment.selectionSet,
            typeCondition(schema, fragment.typeCondition.name.value, parent),
            inheritedLimit,
          );
          visiting.delete(name);
          fragmentMeasures.set(key, known);
        }
        inner = known;
      }
      depth = Math.max(depth, inner.depth);
      cost += inner.cost;
    }
    return { depth, cost };
  };

  const root = schema.getRootType(operation.operation) ?? undefined;
  const { depth, cost } = measure(operation.selectionSet, root, undefined);
  return { depth, cost, introspectionListNesting };
}

/** What the walk of an operation's fragments shares: each fragment measured once, cycles cut. */
interface FragmentWalk {
  schema: GraphQLSchema;
  getFragment: (name: string) => FragmentDefinitionNode | null | undefined;
  fragmentNesting: Map<string, number>;
  visiting: Set<string>;
}

function sizeOf(value: ValueNode, variableDefaults: Map<string, number>): number | undefined {
  if (value.kind === Kind.INT) return Math.max(0, Number(value.value));
  if (value.kind === Kind.VARIABLE) return variableDefaults.get(value.name.value);
  return undefined;
}

function limitOf(field: FieldNode, variableDefaults: Map<string, number>): number | undefined {
  for (const argument of field.arguments ?? []) {
    if (LIMIT_ARGUMENTS.has(argument.name.value)) return sizeOf(argument.value, variableDefaults);
  }
  for (const argument of field.arguments ?? []) {
    if (argument.value.kind !== Kind.OBJECT) continue;
    for (const inner of argument.value.fields) {
      if (LIMIT_ARGUMENTS.has(inner.name.value)) return sizeOf(inner.value, variableDefaults);
    }
  }
  return undefined;
}

function fieldDefinition(parent: GraphQLNamedType | undefined, name: string) {
  if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
  if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
  if (parent && (isObjectType(parent) || isInterfaceType(parent))) return parent.getFields()[name];
  return undefined;
}

function typeCondition(
  schema: GraphQLSchema,
  name: string | undefined,
  parent: GraphQLNamedType | undefined,
): GraphQLNamedType | undefined {
  return name === undefined ? parent : (schema.getType(name) ?? undefined);
}

/** Lists nested inside an introspection field. */
function nesting(
  walk: FragmentWalk,
  selectionSet: SelectionSetNode,
  parent: GraphQLNamedType | undefined,
): number {
  const { schema, getFragment, fragmentNesting, visiting } = walk;
  let deepest = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      const type = fieldDefinition(parent, selection.name.value)?.type;
      const own = type && isListType(getNullableType(type)) ? 1 : 0;
      const inner = selection.selectionSet
        ? nesting(walk, selection.selectionSet, type && getNamedType(type))
        : 0;
      deepest = Math.max(deepest, own + inner);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      deepest = Math.max(
        deepest,
        nesting(
          walk,
          selection.selectionSet,
          typeCondition(schema, selection.typeCondition?.name.value, parent),
        ),
      );
    } else {
      const name = selection.name.value;
      let value = fragmentNesting.get(name);
      if (value === undefined) {
        const fragment = getFragment(name);
        if (!fragment || visiting.has(name)) continue; // unknown or cyclic: validation reports it
        visiting.add(name);
        value = nesting(
          walk,
          fragment.selectionSet,
          typeCondition(schema, fragment.typeCondition.name.value, parent),
        );
        visiting.delete(name);
        fragmentNesting.set(name, value);
      }
      deepest = Math.max(deepest, value);
    }
  }
  return deepest;
}

// ---------------------------------------------------------------------------------------------
// Document size, fields and aliases (checked before parsing and before validation)

/** Largest query document accepted, bytes (UTF-8). */
export const DEFAULT_MAX_QUERY_BYTES = 64 * 1024;
/** Most aliases in one document. */
export const DEFAULT_MAX_ALIASES = 100;
/** Most field selections written in one document (`__typename` included, fragments counted once). */
export const DEFAULT_MAX_FIELDS = 500;
/** Memory allowed to the parsed-and-compiled query caches of one endpoint, bytes. */
export const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;

export interface DocumentLimits {
  maxQueryBytes: number;
  maxAliases: number;
  maxFields: number;
}

/**
 * Deepest nesting of brackets, braces and parentheses a document may write (outside strings and
 * comments), checked on the text before it is parsed: graphql's parser recurses once per level, so
 * 5,000 nested `[` in an argument would otherwise overflow the stack inside `parse`. A legitimate
 * document (selection depth at most `DEFAULT_MAX_DEPTH`, a few levels of input objects) needs far
 * fewer.
 */
export const MAX_DOCUMENT_NESTING = 64;

/**
 * Refuses, before it is parsed, a query text over `maxQueryBytes` or nesting `(`, `[` or `{` deeper
 * than `MAX_DOCUMENT_NESTING` (an `AppError` 400, `QUERY_TOO_LARGE` or `QUERY_TOO_DEEP`).
 */
export function checkQuerySize(source: unknown, limits: Pick<DocumentLimits, 'maxQueryBytes'>): void {
  if (typeof source !== 'string') return;
  // Cheap first: a string of n characters has at least n and at most 3n UTF-8 bytes.
  if (source.length * 3 > limits.maxQueryBytes) {
    const bytes = Buffer.byteLength(source, 'utf8');
    if (bytes > limits.maxQueryBytes) {
      throw new AppError(
        ERRORS.queryTooLarge,
        `query document of ${bytes} bytes exceeds the maximum of ${limits.maxQueryBytes}`,
      );
    }
  }
  const nesting = documentNesting(source, MAX_DOCUMENT_NESTING);
  if (nesting > MAX_DOCUMENT_NESTING) {
    throw new AppError(
      ERRORS.queryTooDeep,
      `query document nests brackets, braces or parentheses deeper than the maximum of ${MAX_DOCUMENT_NESTING}`,
    );
  }
}

const OPEN_PAREN = 0x28;
const CLOSE_PAREN = 0x29;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const HASH = 0x23;
const NEWLINE = 0x0a;
const RETURN = 0x0d;

/**
 * The deepest nesting of `(`, `[` and `{` in a GraphQL text, skipping strings (`"..."` with
 * escapes, block strings `"""..."""`) and comments (`#` to the end of the line); stops counting
 * once past `stopAbove`. One pass, no allocation: the lexical pre-scan before `parse`. It does
 * not check that the brackets match (the parser does).
 */
export function documentNesting(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let deepest = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_PAREN || c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === CLOSE_PAREN || c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      if (depth > 0) depth--;
    } else if (c === HASH) {
      while (i + 1 < n && text.charCodeAt(i + 1) !== NEWLINE && text.charCodeAt(i + 1) !== RETURN) i++;
    } else if (c === QUOTE) {
      if (text.startsWith('"""', i)) {
        // A block string: only \""" escapes, ends at the next unescaped """.
        i += 3;
        while (i < n && !text.startsWith('"""', i)) i += text.startsWith('\\"""', i) ? 4 : 1;
        i += 2;
      } else {
        i++;
        while (i < n) {
          const d = text.charCodeAt(i);
          if (d === BACKSLASH) i += 2;
          else if (d === QUOTE || d === NEWLINE || d === RETURN) break;
          else i++;
        }
      }
    }
  }
  return deepest;
}

/**
 * Refuses, before validation (whose overlap check is quadratic in the fields of a selection), a
 * document that is not a GraphQL document or that writes more fields or aliases than allowed.
 */
export function checkDocumentShape(document: unknown, limits: Omit<DocumentLimits, 'maxQueryBytes'>): void {
  const doc = document as DocumentNode | null;
  if (!doc || typeof doc !== 'object' || doc.kind !== Kind.DOCUMENT || !Array.isArray(doc.definitions)) {
    throw new AppError(ERRORS.badRequest, 'the query is not a GraphQL document');
  }
  let fields = 0;
  let aliases = 0;
  const stack: SelectionSetNode[] = [];
  for (const definition of doc.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION)
      stack.push(definition.selectionSet);
  }
  while (stack.length > 0) {
    for (const selection of stack.pop()!.selections) {
      if (selection.kind === Kind.FIELD) {
        fields++;
        if (selection.alias) aliases++;
      }
      if (selection.kind !== Kind.FRAGMENT_SPREAD && selection.selectionSet)
        stack.push(selection.selectionSet);
    }
  }
  if (aliases > limits.maxAliases) {
    throw new AppError(
      ERRORS.queryTooCostly,
      `query has ${aliases} aliases, the maximum is ${limits.maxAliases}`,
    );
  }
  if (fields > limits.maxFields) {
    throw new AppError(
      ERRORS.queryTooCostly,
      `query has ${fields} fields, the maximum is ${limits.maxFields}`,
    );
  }
}

/**
 * Entries of each of mercurius's two query caches (parsed and compiled queries; queries that failed
 * validation) so that both together stay within `cacheBytes`, counting each entry at the most a
 * document within the limits can take (about 2 bytes per byte of text and 2 KiB per field, for
 * its syntax tree, validation and graphql-jit code).
 */
export function cacheEntries(cacheBytes: number, limits: Omit<DocumentLimits, 'maxAliases'>): number {
  const entry = 2 * limits.maxQueryBytes + 2048 * limits.maxFields;
  return Math.max(1, Math.floor(cacheBytes / 2 / entry));
}
