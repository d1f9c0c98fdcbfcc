import {
  closest,
  type DataType,
  type FieldDef,
  fieldPaths,
  resolveField,
  SCHEMA_NAME,
} from '../catalog.js';
import { QueryError } from '../errors.js';
import type { QueryNode, Span, TermNode } from './ast.js';
import { parseQuery } from './parse.js';

export interface QueryIssue {
  message: string;
  span: Span;
  field: string;
  /** A known field to use instead, when the name is a near miss. */
  suggestion?: string;
  /** The field is not one the schema knows: a warning unless the check is strict. */
  unknown?: true;
}

/** The definition of a dotted field path, or undefined for a field the schema does not know. */
export type FieldSchema = (path: string) => FieldDef | undefined;

export interface QueryCheckOptions {
  /** Refuse a field the schema does not know, as the service does; otherwise it is reported. */
  strict?: boolean;
  /** The fields known: the catalogue's by default (the emulator adds the ones it serves). */
  schema?: FieldSchema;
}

export interface CheckedQuery {
  ast: QueryNode;
  /**
   * The fields the schema does not know, once each in query order, the first few with the
   * nearest known name: the query goes to the service as written, and the service decides.
   */
  unknown: QueryIssue[];
}

/** Unknown fields that get a suggestion: each costs a pass over every known name. */
const SUGGESTED = 5;

/**
 * Problems of the query's named fields, in query order: unknown fields (marked `unknown`, with
 * their suggestions) and values that cannot apply to a known field. A bare value searches every
 * text field and cannot be wrong.
 */
export function lintQuery(
  ast: QueryNode,
  type: DataType,
  options: QueryCheckOptions = {},
): QueryIssue[] {
  const suggestions = new Map<string, string | undefined>();
  return issuesOf(ast, type, schemaOf(type, options)).map((issue) =>
    withSuggestion(issue, type, suggestions),
  );
}

/**
 * Parses a query and checks it the way the service would, before it costs credits. Syntax
 * errors throw SLUICE_QUERY_SYNTAX (SLUICE_QUERY_TOO_LONG past MAX_QUERY_LENGTH), a value that
 * cannot apply to its field SLUICE_QUERY_FIELD, and so does an unknown field when `strict`;
 * otherwise unknown fields come back beside the tree.
 */
export function checkQuery(
  query: string,
  type: DataType,
  options: QueryCheckOptions = {},
): CheckedQuery {
  const ast = parseQuery(query);
  const issues = issuesOf(ast, type, schemaOf(type, options));
  const refused = issues.find((issue) => options.strict || !issue.unknown);
  if (refused) {
    // Only the issue reported looks for a suggestion: thousands of unknown fields took seconds.
    const issue = withSuggestion(refused, type, new Map());
    throw new QueryError(
      issue.message,
      query,
      issue.span.start,
      issue.span.end,
      'SLUICE_QUERY_FIELD',
    );
  }
  const unknown: QueryIssue[] = [];
  const named = new Set<string>();
  const suggestions = new Map<string, string | undefined>();
  for (const issue of issues) {
    if (named.has(issue.field)) continue;
    named.add(issue.field);
    unknown.push(named.size <= SUGGESTED ? withSuggestion(issue, type, suggestions) : issue);
  }
  return { ast, unknown };
}

function schemaOf(type: DataType, options: QueryCheckOptions): FieldSchema {
  return options.schema ?? ((path) => resolveField(type, path));
}

/** The issues of every term, in query order; an unknown field's has no suggestion yet. */
function issuesOf(ast: QueryNode, type: DataType, schema: FieldSchema): QueryIssue[] {
  const issues: QueryIssue[] = [];
  const seen = new Set<string>();
  for (const node of terms(ast)) {
    const issue = checkTerm(node, type, schema);
    if (!issue) continue;
    // Terms expanded from `city:(a OR b)` share one field span; report that text once.
    const key = `${issue.span.start}:${issue.span.end}:${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues.sort((a, b) => a.span.start - b.span.start);
}

/** An unknown field's issue with the known field it is a near miss of, when there is one. */
function withSuggestion(
  issue: QueryIssue,
  type: DataType,
  cache: Map<string, string | undefined>,
): QueryIssue {
  if (!issue.unknown) return issue;
  let suggestion: string | undefined;
  if (cache.has(issue.field)) suggestion = cache.get(issue.field);
  else {
    suggestion = suggestionFor(issue.field, type);
    cache.set(issue.field, suggestion);
  }
  if (suggestion === undefined) return issue;
  return { ...issue, message: `${issue.message}; did you mean '${suggestion}'?`, suggestion };
}

function suggestionFor(field: string, type: DataType): string | undefined {
  const { paths, longest } = knownFields(type);
  // closest() allows edits of about a third of the name: a name over twice as long as every
  // known one is further than that from all of them, and measuring how far costs its length
  // times theirs (seconds, for a name near MAX_QUERY_LENGTH).
  if (field.length > 2 * longest) return undefined;
  return closest(field, paths);
}

function checkTerm(node: TermNode, type: DataType, schema: FieldSchema): QueryIssue | undefined {
  const field = node.field;
  if (field === null) return undefined;
  const def = schema(field);
  if (!def) {
    const span = node.fieldSpan ?? node.span;
    return {
      // The service's own words, which the emulator answers with.
      message: `field '${field}' does not exist in the ${SCHEMA_NAME[type]} schema`,
      span,
      field,
      unknown: true,
    };
  }

  const value = node.value;
  if (value.kind === 'exists') return undefined;
  const issue = (message: string): QueryIssue => ({ message, span: node.valueSpan, field });
  if (def.kind === 'objects') {
    const first = Object.keys(def.fields)[0];
    return issue(
      `field '${field}' holds nested records; search one of its fields, such as '${field}.${first}'`,
    );
  }

  const kind = scalarKind(def);
  if (kind === 'boolean') {
    if (value.kind === 'range') return issue(`a range cannot apply to true/false field '${field}'`);
    if (value.kind === 'prefix')
      return issue(`wildcards cannot apply to true/false field '${field}'`);
    const text = value.text.toLowerCase();
    if (text !== 'true' && text !== 'false') {
      return issue(`field '${field}' is true or false, not '${value.text}'`);
    }
  }
  if (kind === 'number' || kind === 'integer') {
    const texts =
      value.kind === 'exact'
        ? [value.text]
        : value.kind === 'range'
          ? [value.lower, value.upper]
          : [];
    for (const text of texts) {
      if (text !== null && !isNumeric(text)) {
        return issue(`field '${field}' holds numbers, not '${text}'`);
      }
    }
  }
  return undefined;
}

function scalarKind(def: Exclude<FieldDef, { kind: 'objects' }>) {
  return def.kind === 'list' ? def.of : def.kind;
}

function isNumeric(text: string): boolean {
  return text.trim() !== '' && Number.isFinite(Number(text));
}

function* terms(node: QueryNode): Generator<TermNode> {
  switch (node.type) {
    case 'term':
      yield node;
      return;
    case 'not':
      yield* terms(node.child);
      return;
    case 'and':
    case 'or':
      for (const child of node.children) yield* terms(child);
      return;
    case 'all':
      return;
  }
}

const known = new Map<DataType, { paths: string[]; longest: number }>();

function knownFields(type: DataType): { paths: string[]; longest: number } {
  let fields = known.get(type);
  if (!fields) {
    const paths = fieldPaths(type);
    fields = { paths, longest: Math.max(...paths.map((p) => p.length)) };
    known.set(type, fields);
  }
  return fields;
}
