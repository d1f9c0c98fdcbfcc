// Longer than most files on purpose: a recursive-descent parser of one grammar reads best whole,
// each rule beside the ones it calls.
import { QueryError } from '../errors.js';
import type { QueryNode, Span, TermNode, TermValue } from './ast.js';

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const SPACE = /\s/;
// Recursion guard: a query of ten thousand '(' should be a syntax error, not a stack overflow.
const MAX_DEPTH = 100;

/**
 * The longest query parsed, in characters. Real queries run to a few hundred, a long list of ids
 * to some thousands; parsing and checking one of this length still takes well under a second,
 * while one of megabytes took seconds and could exhaust memory building its values and tree.
 */
export const MAX_QUERY_LENGTH = 100_000;

/** The start of a query too long to show whole, in its excerpt. */
const TOO_LONG_HEAD = 60;
/** The most of the query a message quotes. */
const CLIP = 40;

/**
 * Parses a query in the service's Lucene-like syntax. Throws QueryError (SLUICE_QUERY_SYNTAX)
 * whose start/end cover the offending text, or SLUICE_QUERY_TOO_LONG before reading any of a
 * query longer than MAX_QUERY_LENGTH.
 */
export function parseQuery(query: string): QueryNode {
  if (query.length > MAX_QUERY_LENGTH) throw tooLong(query);
  return new QueryParser(query).parse();
}

/**
 * The error's query is the start of the query only, with a caret past it: the excerpt of the
 * whole one would print it twice over, megabytes on a terminal. Whitespace becomes spaces so the
 * caret stays under the end.
 */
function tooLong(query: string): QueryError {
  const count = (n: number) => n.toLocaleString('en-US');
  const head = `${query.slice(0, TOO_LONG_HEAD).replace(/\s/g, ' ')}...`;
  return new QueryError(
    `query is ${count(query.length)} characters long; the limit is ${count(MAX_QUERY_LENGTH)}: split it into several queries`,
    head,
    head.length - 3,
    head.length,
    'SLUICE_QUERY_TOO_LONG',
  );
}

/** The token in front of a term, so errors can name what the missing term should follow. */
interface Before {
  text: string;
  span: Span;
}

/** Inside `field:( ... )` bare values belong to the group's field. */
interface FieldContext {
  field: string;
  fieldSpan: Span;
}

/** Where a word stops: terms also stop at ':' (a field name), range bounds at ']' and '}'. */
type WordMode = 'term' | 'value' | 'bound';

interface Word {
  text: string;
  start: number;
  end: number;
  escaped: boolean;
  /** Unescaped '*' only; an escaped one is a literal character. */
  stars: { raw: number; index: number }[];
}

class QueryParser {
  readonly #q: string;
  #pos = 0;
  #depth = 0;

  constructor(query: string) {
    this.#q = query;
  }

  parse(): QueryNode {
    this.#skipSpace();
    if (this.#atEnd()) return { type: 'all', span: { start: 0, end: this.#q.length } };
    const node = this.#parseOr(null, null);
    this.#skipSpace();
    // #parseOr stops early only in front of a ')' it has no '(' for.
    if (!this.#atEnd()) this.#fail("unexpected ')' with no matching '('", this.#pos, this.#pos + 1);
    return node;
  }

  #parseOr(ctx: FieldContext | null, before: Before | null): QueryNode {
    const children = [this.#parseAnd(ctx, before)];
    for (;;) {
      this.#skipSpace();
      const op = this.#keywordAt();
      if (op?.text !== 'OR') break;
      this.#pos = op.span.end;
      children.push(this.#parseAnd(ctx, op));
    }
    return combine('or', children);
  }

  #parseAnd(ctx: FieldContext | null, before: Before | null): QueryNode {
    const children = [this.#parseUnary(ctx, before)];
    for (;;) {
      this.#skipSpace();
      if (this.#atEnd() || this.#peek() === ')') break;
      const op = this.#keywordAt();
      if (op?.text === 'OR') break;
      if (op?.text === 'AND') {
        this.#pos = op.span.end;
        children.push(this.#parseUnary(ctx, op));
      } else {
        children.push(this.#parseUnary(ctx, null));
      }
    }
    return combine('and', children);
  }

  #parseUnary(ctx: FieldContext | null, before: Before | null): QueryNode {
    this.#skipSpace();
    const start = this.#pos;
    if (this.#atEnd()) {
      if (before)
        this.#fail(
          `unexpected '${before.text}' at end of query`,
          before.span.start,
          before.span.end,
        );
      this.#fail('unexpected end of query', start, start);
    }
    const c = this.#q[start]!;
    if (c === ')') {
      if (before)
        this.#fail(`expected a term after '${before.text}'`, before.span.start, before.span.end);
      this.#fail("unexpected ')' with no matching '('", start, start + 1);
    }
    const op = this.#keywordAt();
    if (op && op.text !== 'NOT') {
      const where = before ? `after '${before.text}'` : 'at start of query';
      this.#fail(`unexpected '${op.text}' ${where}`, op.span.start, op.span.end);
    }
    if (op || c === '-' || c === '+') {
      const sign = op ?? { text: c, span: { start, end: start + 1 } };
      if (!op) {
        const next = this.#q[start + 1];
        if (next === undefined || SPACE.test(next) || next === ')') {
          this.#fail(`expected a term right after '${c}'`, start, start + 1);
        }
      }
      this.#pos = sign.span.end;
      this.#enter(start);
      const child = this.#parseUnary(ctx, sign);
      this.#depth--;
      if (c === '+' && !op) return child;
      return { type: 'not', child, span: { start, end: child.span.end } };
    }
    if (c === '(') return this.#parseGroup(ctx, start);
    return this.#parseTerm(ctx);
  }

  #parseGroup(ctx: FieldContext | null, start: number): QueryNode {
    const open = this.#pos;
    this.#enter(open);
    this.#pos++;
    this.#skipSpace();
    const unclosed = () =>
      this.#fail(`expected ')' to close '(' opened at ${open}`, open, open + 1);
    if (this.#atEnd()) unclosed();
    if (this.#peek() === ')') this.#fail('empty parentheses', open, this.#pos + 1);
    const inner = this.#parseOr(ctx, { text: '(', span: { start: open, end: open + 1 } });
    this.#skipSpace();
    if (this.#atEnd()) unclosed();
    this.#pos++;
    this.#depth--;
    return { ...inner, span: { start, end: this.#pos } };
  }

  #parseTerm(ctx: FieldContext | null): QueryNode {
    const start = this.#pos;
    const c = this.#peek();
    if (c === '"' || c === '[' || c === '{' || c === '>' || c === '<') {
      if (ctx) return this.#parseValue(ctx, start);
      if (c === '"') return this.#parseQuoted(null, start);
      const example = c === '[' || c === '{' ? 'price:[1 TO 2]' : 'price:>100';
      const what = c === '[' || c === '{' ? 'range' : 'comparison';
      this.#fail(`a ${what} needs a field, as in ${example}`, start, start + 1);
    }
    const word = this.#readWord('term');
    if (this.#peek() !== ':') return this.#wordTerm(word, ctx, start);

    const colon = this.#pos;
    if (word.text === '*' && word.stars.length === 1 && this.#q[colon + 1] === '*') {
      if (this.#isTermEnd(colon + 2)) {
        this.#pos = colon + 2;
        return { type: 'all', span: { start, end: this.#pos } };
      }
    }
    if (word.start === word.end) this.#fail("expected a field name before ':'", colon, colon + 1);
    if (word.escaped || !FIELD_NAME.test(word.text)) {
      this.#fail(`'${clip(word.text)}' is not a valid field name`, word.start, word.end);
    }
    this.#pos = colon + 1;
    const field = { field: word.text, fieldSpan: { start: word.start, end: word.end } };
    const next = this.#peek();
    if (next === undefined || SPACE.test(next) || next === ')') {
      this.#fail(`expected a value after '${clip(word.text)}:'`, start, colon + 1);
    }
    if (next === '(') return this.#parseGroup(field, start);
    return this.#parseValue(field, start);
  }

  /** A value whose field is known: quoted, range, comparison or plain word. */
  #parseValue(ctx: FieldContext, start: number): QueryNode {
    const c = this.#peek();
    if (c === '"') return this.#parseQuoted(ctx, start);
    if (c === '[' || c === '{') return this.#parseRange(ctx, start);
    if (c === '>' || c === '<') return this.#parseComparison(ctx, start);
    return this.#wordTerm(this.#readWord('value'), ctx, start);
  }

  #parseQuoted(ctx: FieldContext | null, start: number): TermNode {
    const quoted = this.#readQuoted();
    this.#expectTermEnd('the closing quote');
    const valueSpan = { start: quoted.start, end: quoted.end };
    return term(ctx, { kind: 'exact', text: quoted.text, quoted: true }, valueSpan, start);
  }

  #parseRange(ctx: FieldContext, start: number): TermNode {
    const open = this.#pos;
    const opener = this.#q[open]!;
    this.#pos++;
    const unclosed = (): never =>
      this.#fail(`expected ']' or '}' to close '${opener}' opened at ${open}`, open, open + 1);

    this.#skipSpace();
    if (this.#atEnd()) unclosed();
    if (this.#atRangeClose())
      this.#fail(`expected a lower bound after '${opener}'`, open, this.#pos + 1);
    const lower = this.#readBound();
    if (!lower.quoted && lower.text === 'TO') {
      this.#fail("expected a lower bound before 'TO'", lower.start, lower.end);
    }

    this.#skipSpace();
    if (this.#atEnd()) unclosed();
    if (this.#atRangeClose()) this.#fail("range needs 'TO'", this.#pos, this.#pos + 1);
    const to = this.#peek() === '"' ? this.#tokenAt(this.#pos) : this.#readWord('bound');
    if (to.text !== 'TO' || ('escaped' in to && to.escaped)) {
      this.#fail(`range needs 'TO', found '${clip(to.text)}'`, to.start, to.end);
    }

    this.#skipSpace();
    if (this.#atEnd()) unclosed();
    if (this.#atRangeClose()) this.#fail("expected an upper bound after 'TO'", to.start, to.end);
    const upper = this.#readBound();

    this.#skipSpace();
    if (this.#atEnd()) unclosed();
    if (!this.#atRangeClose()) {
      const found = this.#tokenAt(this.#pos);
      this.#fail(
        `expected ']' or '}' to close '${opener}' opened at ${open}, found '${clip(found.text)}'`,
        found.start,
        found.end,
      );
    }
    const closer = this.#q[this.#pos]!;
    this.#pos++;
    this.#expectTermEnd(`'${closer}'`);
    const value: TermValue = {
      kind: 'range',
      lower: lower.value,
      upper: upper.value,
      includeLower: opener === '[',
      includeUpper: closer === ']',
    };
    return term(ctx, value, { start: open, end: this.#pos }, start);
  }

  #parseComparison(ctx: FieldContext, start: number): TermNode {
    const opStart = this.#pos;
    let op = this.#q[opStart]!;
    this.#pos++;
    if (this.#peek() === '=') {
      op += '=';
      this.#pos++;
    }
    const next = this.#peek();
    if (next === undefined || SPACE.test(next) || next === ')') {
      this.#fail(`expected a value after '${op}'`, opStart, this.#pos);
    }
    let bound: string;
    if (next === '"') {
      bound = this.#readQuoted().text;
      this.#expectTermEnd('the closing quote');
    } else {
      const word = this.#readWord('value');
      const star = word.stars[0];
      if (star) {
        const message =
          word.text === '*'
            ? `a comparison needs a value, not '*'`
            : 'wildcards are not allowed in a comparison';
        this.#fail(message, star.raw, star.raw + 1);
      }
      bound = word.text;
    }
    const inclusive = op.length === 2;
    const value: TermValue = op.startsWith('>')
      ? {
          kind: 'range',
          lower: bound,
          upper: null,
          includeLower: inclusive,
          includeUpper: inclusive,
        }
      : {
          kind: 'range',
          lower: null,
          upper: bound,
          includeLower: inclusive,
          includeUpper: inclusive,
        };
    return term(ctx, value, { start: opStart, end: this.#pos }, start);
  }

  #wordTerm(word: Word, ctx: FieldContext | null, start: number): QueryNode {
    const valueSpan = { start: word.start, end: word.end };
    if (word.stars.length === 0) {
      return term(ctx, { kind: 'exact', text: word.text, quoted: false }, valueSpan, start);
    }
    let length = word.text.length;
    let k = word.stars.length - 1;
    while (k >= 0 && word.stars[k]!.index === length - 1) {
      length--;
      k--;
    }
    if (k >= 0) {
      const star = word.stars[0]!;
      this.#fail('wildcards are only supported at the end of a value', star.raw, star.raw + 1);
    }
    if (length > 0) {
      return term(ctx, { kind: 'prefix', prefix: word.text.slice(0, length) }, valueSpan, start);
    }
    if (!ctx) return { type: 'all', span: valueSpan };
    return term(ctx, { kind: 'exists' }, valueSpan, start);
  }

  #readBound(): {
    value: string | null;
    text: string;
    quoted: boolean;
    start: number;
    end: number;
  } {
    if (this.#peek() === '"') {
      const quoted = this.#readQuoted();
      return { value: quoted.text, quoted: true, ...quoted };
    }
    const word = this.#readWord('bound');
    const star = word.stars[0];
    if (star) {
      if (word.text === '*')
        return { value: null, text: '*', quoted: false, start: word.start, end: word.end };
      this.#fail('wildcards are not allowed in range bounds', star.raw, star.raw + 1);
    }
    return { value: word.text, text: word.text, quoted: false, start: word.start, end: word.end };
  }

  #readQuoted(): { text: string; start: number; end: number } {
    const q = this.#q;
    const start = this.#pos;
    let text = '';
    let i = start + 1;
    for (;;) {
      const ch = q[i];
      if (ch === undefined) this.#fail('unterminated quote', start, q.length);
      if (ch === '"') break;
      if (ch === '\\') {
        const escaped = q[i + 1];
        if (escaped === undefined) this.#fail('unterminated quote', start, q.length);
        text += escaped;
        i += 2;
      } else {
        text += ch;
        i++;
      }
    }
    this.#pos = i + 1;
    return { text, start, end: this.#pos };
  }

  #readWord(mode: WordMode): Word {
    const q = this.#q;
    const start = this.#pos;
    let text = '';
    let escaped = false;
    const stars: Word['stars'] = [];
    let i = start;
    for (; i < q.length; i++) {
      const ch = q[i]!;
      if (SPACE.test(ch)) break;
      if (mode === 'bound' ? ch === ']' || ch === '}' : ch === '(' || ch === ')') break;
      if (mode === 'term' && ch === ':') break;
      if (ch === '\\') {
        const next = q[i + 1];
        if (next === undefined) this.#fail("dangling '\\' at end of query", i, i + 1);
        text += next;
        escaped = true;
        i++;
        continue;
      }
      if (ch === '"') {
        this.#fail(`unexpected '"' inside a value; quote the whole value or write \\"`, i, i + 1);
      }
      if (ch === '*') stars.push({ raw: i, index: text.length });
      text += ch;
    }
    this.#pos = i;
    return { text, start, end: i, escaped, stars };
  }

  /** AND, OR and NOT are keywords only in upper case and as whole words (`AND:x` is a field). */
  #keywordAt(): Before | null {
    for (const text of ['AND', 'OR', 'NOT']) {
      const end = this.#pos + text.length;
      if (this.#q.startsWith(text, this.#pos) && this.#isKeywordEnd(end)) {
        return { text, span: { start: this.#pos, end } };
      }
    }
    return null;
  }

  #isKeywordEnd(i: number): boolean {
    const ch = this.#q[i];
    return ch === undefined || SPACE.test(ch) || ch === '(' || ch === ')' || ch === '"';
  }

  #isTermEnd(i: number): boolean {
    const ch = this.#q[i];
    return ch === undefined || SPACE.test(ch) || ch === ')';
  }

  #expectTermEnd(after: string): void {
    if (this.#isTermEnd(this.#pos)) return;
    const found = this.#tokenAt(this.#pos);
    this.#fail(`unexpected '${clip(found.text)}' after ${after}`, found.start, found.end);
  }

  #atRangeClose(): boolean {
    const ch = this.#peek();
    return ch === ']' || ch === '}';
  }

  /** The run of text up to the next space, for naming what was found instead. */
  #tokenAt(start: number): { text: string; start: number; end: number } {
    let end = start;
    while (end < this.#q.length && !SPACE.test(this.#q[end]!)) end++;
    return { text: this.#q.slice(start, end), start, end };
  }

  #enter(at: number): void {
    this.#depth++;
    if (this.#depth > MAX_DEPTH) this.#fail('query is nested too deeply', at, at + 1);
  }

  #peek(): string | undefined {
    return this.#q[this.#pos];
  }

  #atEnd(): boolean {
    return this.#pos >= this.#q.length;
  }

  #skipSpace(): void {
    while (this.#pos < this.#q.length && SPACE.test(this.#q[this.#pos]!)) this.#pos++;
  }

  #fail(message: string, start: number, end: number): never {
    throw new QueryError(message, this.#q, start, end, 'SLUICE_QUERY_SYNTAX');
  }
}

/** Query text quoted in a message: a long run of it would bury the message (the span has it). */
function clip(text: string): string {
  return text.length > CLIP ? `${text.slice(0, CLIP - 3)}...` : text;
}

function term(
  ctx: FieldContext | null,
  value: TermValue,
  valueSpan: Span,
  start: number,
): TermNode {
  const span = { start, end: valueSpan.end };
  const node: TermNode = ctx
    ? { type: 'term', field: ctx.field, fieldSpan: ctx.fieldSpan, value, valueSpan, span }
    : { type: 'term', field: null, value, valueSpan, span };
  return node;
}

function combine(type: 'and' | 'or', children: QueryNode[]): QueryNode {
  if (children.length === 1) return children[0]!;
  const span = { start: children[0]!.span.start, end: children[children.length - 1]!.span.end };
  return { type, children, span };
}
