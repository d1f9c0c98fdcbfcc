export type {
  AllNode,
  AndNode,
  NotNode,
  OrNode,
  QueryNode,
  Span,
  TermNode,
  TermValue,
} from './ast.js';
export { addressKey, type CompileOptions, compileQuery, type RecordPredicate } from './evaluate.js';
export { checkQuery, lintQuery, type QueryIssue } from './lint.js';
export { parseQuery } from './parse.js';
