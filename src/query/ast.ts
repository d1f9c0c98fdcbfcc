// The parsed form of a query. Spans are 0-based character offsets into the query text (end
// exclusive), so a linter or evaluator can point back at the exact text a problem came from.

export interface Span {
  readonly start: number;
  readonly end: number;
}

export type TermValue =
  | { readonly kind: 'exact'; readonly text: string; readonly quoted: boolean }
  | { readonly kind: 'prefix'; readonly prefix: string }
  | { readonly kind: 'exists' }
  | {
      readonly kind: 'range';
      /** null is an open end (`*`, or the missing side of a comparison). */
      readonly lower: string | null;
      readonly upper: string | null;
      readonly includeLower: boolean;
      readonly includeUpper: boolean;
    };

export interface AndNode {
  readonly type: 'and';
  readonly children: readonly QueryNode[];
  readonly span: Span;
}

export interface OrNode {
  readonly type: 'or';
  readonly children: readonly QueryNode[];
  readonly span: Span;
}

export interface NotNode {
  readonly type: 'not';
  readonly child: QueryNode;
  readonly span: Span;
}

export interface TermNode {
  readonly type: 'term';
  /** null for a bare value, which searches every text field. */
  readonly field: string | null;
  /**
   * Where the field name is written. Terms expanded from a field group (`city:(a OR b)`) share
   * the group's field span, since that is the text to fix when the field is wrong.
   */
  readonly fieldSpan?: Span;
  readonly value: TermValue;
  readonly valueSpan: Span;
  readonly span: Span;
}

/** Matches every record: the empty query, `*` and `*:*`. */
export interface AllNode {
  readonly type: 'all';
  readonly span: Span;
}

export type QueryNode = AndNode | OrNode | NotNode | TermNode | AllNode;
