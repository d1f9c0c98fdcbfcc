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
}

/**
 * Problems the service would reject the query for, in query order. Only named fields are
 * checked: a bare value searches every text field and cannot be wrong.
 */
export function lintQuery(ast: QueryNode, type: DataType): QueryIssue[] {
  const suggestions = new Map<string, string | undefined>();
  return issuesOf(ast, type).map((issue) => withSuggestion(issue, type, suggestions));
}

/**
 * Parses a query and rejects it the way the service would, before it costs credits. Syntax
 * errors throw SLUICE_QUERY_SYNTAX (SLUICE_QUERY_TOO_LONG past MAX_QUERY_LENGTH), field problems
 * SLUICE_QUERY_FIELD.
 */
export function checkQuery(query: string, type: DataType): QueryNode {
  const ast = parseQuery(query);
  const first = issuesOf(ast, type)[0];
  if (first) {
    // Only the issue reported looks for a suggestion: thousands of unknown fields took seconds.
    const issue = withSuggestion(first, type, new Map());
    throw new QueryError(
      issue.message,
      query,
      issue.span.start,
      issue.span.end,
      'SLUICE_QUERY_FIELD',
    );
  }
  return ast;
}

/** The issues of every term, in query order; an unknown field's has no suggestion yet. */
function issuesOf(ast: QueryNode, type: DataType): QueryIssue[] {
  const issues: QueryIssue[] = [];
  const seen = new Set<string>();
  for (const node of terms(ast)) {
    const issue = checkTerm(node, type);
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
  if (resolveField(type, issue.field)) return issue;
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

function checkTerm(node: TermNode, type: DataType): QueryIssue | undefined {
  const field = node.field;
  if (field === null) return undefined;
  const def = resolveField(type, field);
  if (!def) {
    const span = node.fieldSpan ?? node.span;
    return {
      message: `field '${field}' does not exist in the ${SCHEMA_NAME[type]} schema`,
      span,
      field,
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
