import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, resolve as resolvePath } from 'node:path';
import { type Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import type { z } from 'zod';
import {
  CREDIT_TYPES,
  closest,
  FIELDS,
  PREMADE_VIEWS,
  premadeView,
  resolveField,
} from '../catalog.js';
import { PipelineSpecError, QueryError } from '../errors.js';
import { destinationEntryOf, destinationExamples, destinations } from '../load/index.js';
import { checkQuery } from '../query/index.js';
import {
  BUDGET_AMOUNT,
  type Budget,
  type BudgetPeriod,
  type JobSpec,
  knownKeys,
  type PipelineSpec,
  pipelineSchema,
  type RawPipeline,
} from './spec-format.js';

export type { Budget, BudgetPeriod, JobSpec, PipelineSpec } from './spec-format.js';
export { parseDuration, pipelineJsonSchema } from './spec-format.js';

/**
 * Pipeline files: YAML -> a validated, resolved spec. Every error names the file, the line and
 * the field (`pipelines/x.yaml:12: jobs.homes.recods: unknown key; did you mean 'records'?`).
 */

export interface LoadOptions {
  /**
   * `optional` for commands that never talk to the service (validate, status): an unset
   * `${VAR}` under `source:` is a warning in `spec.warnings`, not an error.
   */
  source?: 'required' | 'optional';
  /**
   * Which view names a job may use besides those declared under `views:`: `offline` (validate)
   * only the service's pre-made ones; `service` (the default) any other name too, as one the
   * service may hold (made in its portal, say): plan checks it against GET /views, and a run's
   * searches would be refused before they cost anything.
   */
  views?: 'offline' | 'service';
}

export async function loadPipeline(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): Promise<PipelineSpec> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PipelineSpecError(
      code === 'ENOENT' ? 'no such file' : `cannot read: ${(error as Error).message}`,
      {
        file,
        path: '',
      },
    );
  }
  return parsePipeline(text, file, env, options);
}

/** The most YAML aliases a pipeline file may expand: enough for any real file, not for a bomb. */
const MAX_ALIASES = 100;
/** Pipeline files are a few kB; past this, something is wrong with the file. */
const MAX_FILE_CHARS = 1_000_000;

export function parsePipeline(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): PipelineSpec {
  if (text.length > MAX_FILE_CHARS) {
    throw new PipelineSpecError(
      `the file is ${Math.round(text.length / 1e6)} MB; a pipeline file is at most 1 MB`,
      { file, path: '' },
    );
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const lineOf = (offset: number | undefined) =>
    offset === undefined ? undefined : lines.linePos(offset).line;
  if (doc.errors.length > 0) {
    const error = doc.errors[0]!;
    throw new PipelineSpecError(`invalid YAML: ${error.message.split('\n')[0]}`, {
      file,
      line: lineOf(error.pos[0]),
      path: '',
    });
  }
  const warnings: string[] = [];
  const lenient = options.source === 'optional';
  const views = options.views ?? 'service';
  interpolate(doc, doc.contents, [], { env, file, lineOf, lenient, warnings });
  let plain: unknown;
  try {
    plain = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    throw new PipelineSpecError(`invalid YAML: ${(error as Error).message}`, { file, path: '' });
  }
  const parsed = pipelineSchema.safeParse(plain);
  if (!parsed.success) {
    // Every mistake of the file at once, one for each field.
    const seen = new Set<string>();
    const errors: PipelineSpecError[] = [];
    for (const issue of parsed.error.issues) {
      for (const error of issueErrors(issue, doc, file, lineOf)) {
        if (seen.has(error.path)) continue;
        seen.add(error.path);
        errors.push(error);
      }
    }
    throw PipelineSpecError.all(errors);
  }
  return resolve(parsed.data, file, doc, lineOf, { lenient, warnings, views });
}

/** The mistakes zod found, as the file's lines and fields and what to do. */
function issueErrors(
  issue: z.core.$ZodIssue,
  doc: Document,
  file: string,
  lineOf: (offset: number | undefined) => number | undefined,
): PipelineSpecError[] {
  const path = issue.path.map(String);
  const at = (where: string[], message: string) =>
    new PipelineSpecError(message, {
      file,
      line: lineOf(nodeStart(doc, where)),
      path: where.join('.'),
    });
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(path);
    return issue.keys.map((key) => {
      const guess = closest(key, known);
      return at(
        [...path, key],
        `unknown key '${key}'${guess ? `; did you mean '${guess}'?` : known.length ? `; expected one of: ${known.join(', ')}` : ''}`,
      );
    });
  }
  let message = issue.message;
  if (valueAt(doc, path) === undefined) {
    const choices =
      'values' in issue ? ` (one of ${issue.values.map((v) => `'${String(v)}'`).join(', ')})` : '';
    message = `is required${choices}`;
  } else if (issue.code === 'invalid_value' && 'values' in issue) {
    const given = valueAt(doc, path);
    const guess = typeof given === 'string' ? closest(given, issue.values.map(String)) : undefined;
    message = `expected one of ${issue.values.map((v) => `'${String(v)}'`).join(', ')}${given === undefined ? '' : `, got '${String(given)}'`}${guess ? `; did you mean '${guess}'?` : ''}`;
  }
  return [at(path, message)];
}

function resolve(
  raw: RawPipeline,
  file: string,
  doc: Document,
  lineOf: (offset: number | undefined) => number | undefined,
  options: { lenient: boolean; warnings: string[]; views: 'offline' | 'service' },
): PipelineSpec {
  const fail = (message: string, path: string[]): never => {
    throw new PipelineSpecError(message, {
      file,
      line: lineOf(nodeStart(doc, path)),
      path: path.join('.'),
    });
  };
  // Every mistake of the file at once: each check (a job's all together) throws its first, which
  // is kept, and the next check goes on.
  const problems: PipelineSpecError[] = [];
  const check = <T>(work: () => T): T | undefined => {
    try {
      return work();
    } catch (error) {
      if (!(error instanceof PipelineSpecError)) throw error;
      problems.push(error);
      return undefined;
    }
  };
  // Commands that never talk to the service only note what `run` would need.
  const need = (message: string, path: string[]) => {
    if (!options.lenient) check(() => fail(message, path));
    // An unset variable was already noted where it is used.
    else if (!options.warnings.some((w) => /: source\.[^:]*: environment variable/.test(w))) {
      options.warnings.push(`${path.join('.')}: ${message}`);
    }
  };
  if (!raw.source.url) need('is required (the URL of the v4 or v3 root)', ['source', 'url']);
  // v4 takes either: the API token as the bearer token, or a login that sluice renews.
  const login = Boolean(raw.source.email && raw.source.password);
  if (raw.source.api === 'v4' && !login && !raw.source.token) {
    need(
      'the v4 API needs email and password (e.g. ${SLUICE_EMAIL} and ${SLUICE_PASSWORD}), or token (e.g. ${SLUICE_API_TOKEN})',
      ['source'],
    );
  }
  if (raw.source.api === 'v3' && !raw.source.token) {
    need('the v3 API needs token (e.g. ${SLUICE_API_TOKEN})', ['source']);
  }
  const destination =
    typeof raw.destination === 'string' ? { url: raw.destination } : raw.destination;
  if (destinationEntryOf(destination.url) === undefined) {
    check(() => fail(`expected ${destinationExamples()}`, ['destination']));
  }
  const tables = new Map<string, string>();
  const jobs = Object.entries(raw.jobs).flatMap(([name, j]) => {
    const job = check((): JobSpec => {
      const at = (...rest: string[]) => ['jobs', name, ...rest];
      if (raw.source.api === 'v3') checkV3Job(raw, name, j, fail, options.views === 'offline');
      const declared = j.view && Object.hasOwn(raw.views, j.view) ? raw.views[j.view] : undefined;
      const premade = j.view && !declared ? premadeView(j.view) : undefined;
      if (premade && premade.type !== j.type) {
        fail(`view '${j.view}' is a pre-made view of ${premade.type}, not ${j.type}`, at('view'));
      }
      if (j.view && !declared && !premade && options.views === 'offline') {
        const premadeNames = Object.keys(PREMADE_VIEWS).filter(
          (n) => PREMADE_VIEWS[n]!.type === j.type,
        );
        const guess = closest(j.view, [...Object.keys(raw.views), ...premadeNames]);
        fail(
          `view '${j.view}' is not declared under views: nor a pre-made view of ${j.type}${guess ? `; did you mean '${guess}'?` : ''} (plan and run also take a view the service lists)`,
          at('view'),
        );
      }
      if (j.type !== 'properties') {
        for (const key of ['auto_trace', 'address_matching', 'require_people_data'] as const) {
          if (j[key] !== undefined && j[key] !== false)
            fail(`${key} applies to properties only`, at(key));
        }
      }
      if (j.people_keys_from !== undefined) {
        const from = raw.jobs[j.people_keys_from];
        const names = Object.keys(raw.jobs);
        if (j.type !== 'people')
          fail('people_keys_from applies to jobs of type people', at('type'));
        if (!from) {
          const guess = closest(j.people_keys_from, names);
          fail(
            `no job '${j.people_keys_from}' in this file${guess ? `; did you mean '${guess}'?` : ''}`,
            at('people_keys_from'),
          );
        } else if (from.type !== 'properties') {
          fail(`job '${j.people_keys_from}' is not a properties job`, at('people_keys_from'));
        } else if (names.indexOf(j.people_keys_from) > names.indexOf(name)) {
          fail(`job '${j.people_keys_from}' must come before this job`, at('people_keys_from'));
        }
        if (j.query !== undefined)
          fail('a job with people_keys_from builds its own queries: remove query', at('query'));
        if (j.write !== 'merge')
          fail(
            'a job with people_keys_from merges into the people table: write must be merge',
            at('write'),
          );
      } else if (j.query === undefined) {
        fail('a query is required, e.g. city:Austin', at());
      }
      if (
        j.nested === 'tables' &&
        j.write === 'merge' &&
        Array.isArray(j.key) &&
        j.key.length > 1
      ) {
        fail(
          'nested: tables links child rows by one key column; use one key or nested: json',
          at('key'),
        );
      }
      const query = j.query ?? 'keys:*';
      try {
        checkQuery(query, j.type);
      } catch (error) {
        if (!(error instanceof QueryError)) throw error;
        fail(`${error.message}\n${error.excerpt.replace(/^/gm, '    ')}`, at('query'));
      }
      declared?.fields.forEach((field, i) => {
        const path = field.endsWith(':*') ? field.slice(0, -2) : field;
        if (!resolveField(j.type, path)) {
          fail(
            `field '${field}' of view '${j.view}' is not a field of ${j.type} (used by job '${name}')`,
            ['views', j.view!, 'fields', String(i)],
          );
        }
      });
      const keys = Array.isArray(j.key) ? j.key : [j.key];
      // The fields the job's view selects, when known here (declared, or pre-made).
      const viewFields = declared?.fields ?? premade?.fields;
      // The merge key must come with the data, or every row is rejected after the credits are
      // spent: checked against the view's fields, or the data type's.
      if (j.write === 'merge' && j.people_keys_from === undefined) {
        const top =
          viewFields && new Set(viewFields.map((f) => f.replace(/:\*$/, '').split('.')[0]!));
        for (const key of keys) {
          if (top && !top.has(key)) {
            fail(
              `merge key '${key}' is not a field of view '${j.view}' (${viewFields!.join(', ')}): ${declared ? 'add it to the view, or choose another key' : 'choose another key, or a view that has it'}`,
              at('key'),
            );
          } else if (!top && !Object.hasOwn(FIELDS[j.type], key)) {
            const guess = closest(key, Object.keys(FIELDS[j.type]));
            fail(
              `merge key '${key}' is not a field of ${j.type}${guess ? `; did you mean '${guess}'?` : ''}`,
              at('key'),
            );
          }
        }
      }
      if (j.incremental !== undefined) {
        const { cursor } = j.incremental;
        if (j.write !== 'merge') {
          fail(
            j.write === 'replace'
              ? 'incremental needs write: merge: a replace keeps only what one download holds, and an incremental download holds only what changed since the last run'
              : 'incremental needs write: merge: the lookback re-reads records, which append would load twice',
            at('incremental'),
          );
        }
        if (j.people_keys_from !== undefined) {
          fail(
            'an owner lookup follows its properties job: make that job incremental',
            at('incremental'),
          );
        }
        const def = Object.hasOwn(FIELDS[j.type], cursor) ? FIELDS[j.type][cursor] : undefined;
        if (def?.kind !== 'date') {
          const dates = Object.entries(FIELDS[j.type])
            .filter(([, d]) => d.kind === 'date')
            .map(([n]) => n);
          fail(
            `cursor '${cursor}' is not a date field of ${j.type}; use one of ${dates.join(', ')}`,
            at('incremental', 'cursor'),
          );
        }
        if (viewFields && !viewFields.some((f) => f.replace(/:\*$/, '') === cursor)) {
          fail(
            `cursor '${cursor}' is not in view '${j.view}': ${declared ? "add it to the view's fields" : 'choose a view that has it'}, or the run cannot know how far it got`,
            at('incremental', 'cursor'),
          );
        }
      }
      // A name the destination keeps for itself is refused here, before anything is bought: the
      // load could never make its table. Child and link tables begin with these names.
      const reserved = (given: string, what: string, path: string[], fix: string) => {
        const owner = reservedBy(given);
        if (owner !== undefined) fail(`${what} is reserved: ${owner}; ${fix}`, path);
      };
      if (j.people_table !== undefined) {
        reserved(
          j.people_table,
          `people_table '${j.people_table}'`,
          at('people_table'),
          'choose another name',
        );
      }
      const table = j.table ?? (j.people_keys_from ? (j.people_table ?? 'people') : name);
      if (j.table !== undefined)
        reserved(table, `table '${table}'`, at('table'), 'choose another name');
      else if (j.people_keys_from === undefined) {
        reserved(
          table,
          `the job's name '${table}', its table's name by default,`,
          at('table'),
          'add table: with another name',
        );
      }
      const other = tables.get(table);
      if (other) fail(`table '${table}' is already written by job '${other}'`, at('table'));
      tables.set(table, name);
      const downloadHash = hash({
        api: raw.source.api,
        type: j.type,
        query,
        records: j.records,
        view: j.view ?? null,
        viewFields: declared?.fields ?? null,
        format: j.format,
        auto_trace: j.auto_trace,
        address_matching: j.address_matching ?? null,
        require_people_data: j.require_people_data ?? null,
      });
      return {
        ...j,
        name,
        records: j.records === 'all' ? undefined : j.records,
        query,
        table,
        key: j.people_keys_from ? ['people_key'] : Array.isArray(j.key) ? j.key : [j.key],
        downloadHash,
        loadHash: hash({
          table,
          write: j.write,
          nested: j.nested,
          key: keys,
          people_table: j.people_table ?? null,
        }),
      };
    });
    return job === undefined ? [] : [job];
  });
  const budgets = check(() => budgetsOf(raw, fail)) ?? [];
  if (problems.length > 0) throw PipelineSpecError.all(problems);
  return {
    file,
    baseDir: dirname(resolvePath(file)),
    name: raw.name,
    source: { ...raw.source, url: raw.source.url ?? '' },
    destination,
    views: raw.views,
    jobs,
    resumeWindow: raw.resume_window,
    maxParallelJobs: raw.max_parallel_jobs,
    warnings: options.warnings,
    budgets,
  };
}

/**
 * The v3 API's pre-made views, by the names its guides and its customers' clients use
 * (service-interface.md 2.2 names the first seven); the catalogue's PREMADE_VIEWS holds them
 * with the v4 ones, and says each one's data type.
 */
const V3_PREMADE_VIEWS: ReadonlySet<string> = new Set([
  'properties_all',
  'properties_all_nested',
  'businesses_all',
  'businesses_all_nested',
  'businesses_all_nested_no_reviews',
  'businesses_all_menusFlat',
  'businesses_basic',
  'products_all',
  'products_basicFields',
  'products_pricesFlat',
  'products_reviewsFlat',
  'products_keysSourceURLs',
  'products_multiValuedFieldsNested',
]);

/**
 * What a job cannot ask of the v3 API, refused here so that nothing is spent finding out: people
 * data (v3 has none), autotrace and the address options (v4 only); and, `offline` (validate,
 * where nothing can be asked of the service, and v3 cannot list views anyway), a view that is
 * neither declared nor one of v3's pre-made views of the job's data type. Elsewhere another
 * name is left to the service, whose searches say whether it has the view before anything is
 * spent.
 */
function checkV3Job(
  raw: RawPipeline,
  name: string,
  j: RawPipeline['jobs'][string],
  fail: (message: string, path: string[]) => never,
  offline: boolean,
): void {
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  if (j.type === 'people') {
    fail('the v3 API has no people data: use api: v4 for people jobs', at('type'));
  }
  if (j.auto_trace) fail('auto_trace needs the v4 API', at('auto_trace'));
  if (j.address_matching !== undefined && j.address_matching !== 'on')
    fail(
      'address_matching needs the v4 API (v3 always matches addresses on)',
      at('address_matching'),
    );
  if (j.require_people_data)
    fail('require_people_data needs the v4 API', at('require_people_data'));
  if (!offline || j.view === undefined || Object.hasOwn(raw.views, j.view)) return;
  const ofType = [...V3_PREMADE_VIEWS].filter((n) => premadeView(n)?.type === j.type);
  if (ofType.includes(j.view)) return;
  const premade = V3_PREMADE_VIEWS.has(j.view) ? premadeView(j.view) : undefined;
  if (premade !== undefined) {
    fail(`view '${j.view}' is a pre-made v3 view of ${premade.type}, not ${j.type}`, at('view'));
  }
  const guess = closest(j.view, [...Object.keys(raw.views), ...ofType]);
  fail(
    `view '${j.view}' is not declared under views: nor a pre-made v3 view of ${j.type} (${ofType.join(', ')})${guess ? `; did you mean '${guess}'?` : ''}; a view made in the web portal can be used once declared under views: with its fields`,
    at('view'),
  );
}

/**
 * The `budget:` key as a list, one entry per credit type and period. Two budgets of one type
 * and period would each be checked and one of them never matter: the file says one thing twice.
 */
function budgetsOf(raw: RawPipeline, fail: (message: string, path: string[]) => never): Budget[] {
  const budgets: Budget[] = [];
  for (const type of CREDIT_TYPES) {
    const value = raw.budget?.[type];
    if (value === undefined) continue;
    const amounts = typeof value === 'string' ? [value] : value;
    amounts.forEach((amount, i) => {
      const path = typeof value === 'string' ? ['budget', type] : ['budget', type, String(i)];
      // The schema checked the form: credits, a slash, a period.
      const [, limit, period] = BUDGET_AMOUNT.exec(amount)!;
      const same = budgets.find((b) => b.type === type && b.period === period);
      if (same) {
        fail(`two ${type} budgets per ${period} (${same.limit} and ${limit}): keep one`, path);
      }
      budgets.push({ type, limit: Number(limit), period: period as BudgetPeriod });
    });
  }
  return budgets;
}

/**
 * Who reserves a table name, or undefined when it is free: sluice's state tables, and what every
 * destination keeps for itself (`DestinationEntry.reservedPrefixes`), compared case aside. Every
 * destination's, not only the file's: SLUICE_DESTINATION may send the pipeline to another.
 */
function reservedBy(table: string): string | undefined {
  const folded = table.toLowerCase();
  if (folded.startsWith('_sluice'))
    return 'sluice keeps names beginning _sluice for its state tables';
  for (const destination of destinations()) {
    for (const [prefix, why] of destination.reservedPrefixes ?? []) {
      if (folded.startsWith(prefix)) return `${destination.displayName} ${why}`;
    }
  }
  return undefined;
}

function hash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in string scalars with the environment's values.
 * Done on the YAML tree, before validation, so an unset variable is reported at its own line.
 */
function interpolate(
  doc: Document,
  node: unknown,
  path: string[],
  context: {
    env: NodeJS.ProcessEnv;
    file: string;
    lineOf: (offset: number | undefined) => number | undefined;
    lenient: boolean;
    warnings: string[];
  },
): void {
  if (isMap(node)) {
    for (const pair of [...node.items]) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      interpolate(doc, pair.value, [...path, key], context);
      // A `source:` value left unset where it is not needed is as if it were not written.
      if (isScalar(pair.value) && pair.value.value === UNSET) node.delete(pair.key);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      interpolate(doc, item, [...path, String(i)], context);
    });
  } else if (isScalar(node) && typeof node.value === 'string' && !node.value.includes('${')) {
    const secret = literalSecret(path, node.value);
    if (secret !== undefined) {
      context.warnings.push(
        `${context.file}:${context.lineOf(node.range?.[0]) ?? '?'}: ${path.join('.')}: ${secret}`,
      );
    }
  } else if (isScalar(node) && typeof node.value === 'string') {
    let unset = false;
    const value = node.value.replace(
      /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
      (_, name: string, fallback?: string) => {
        const value = context.env[name];
        if (value !== undefined && value !== '') return value;
        if (fallback !== undefined) return fallback;
        const where = `${context.file}:${context.lineOf(node.range?.[0]) ?? '?'}`;
        if (context.lenient && path[0] === 'source') {
          context.warnings.push(
            `${where}: ${path.join('.')}: environment variable ${name} is not set (run needs it; this command does not)`,
          );
          unset = true;
          return '';
        }
        throw new PipelineSpecError(
          `environment variable ${name} is not set${path[0] === 'source' ? '' : ' (set it, or give a default: ${' + name + ':-value})'}`,
          { file: context.file, line: context.lineOf(node.range?.[0]), path: path.join('.') },
        );
      },
    );
    node.value = unset ? UNSET : value;
  }
}

/**
 * What to say of a secret written into the file itself (which is copied, committed and shown
 * around) rather than taken from the environment: the service's password or token, or a
 * password in the destination's URL. Never the secret.
 */
function literalSecret(path: string[], value: string): string | undefined {
  const where = path.join('.');
  if ((where === 'source.password' || where === 'source.token') && value !== '') {
    const variable = where === 'source.token' ? 'SLUICE_API_TOKEN' : 'SLUICE_PASSWORD';
    return `the ${path[1]} is written in the file, where whoever reads it (or its history) can spend your credits; use \${${variable}} and set it in the environment`;
  }
  if (where === 'destination' || where === 'destination.url') {
    try {
      const url = new URL(value);
      if (url.password !== '') {
        return 'the database password is written in the file; take it from the environment (postgres://user:${PGPASSWORD}@host/db), or set the whole URL in SLUICE_DESTINATION';
      }
    } catch {
      // Not a URL (sqlite:PATH): no password in it.
    }
  }
  return undefined;
}

/** The value of a `source:` field whose variable is unset, for a lenient load. */
const UNSET = Symbol('unset');

/** Offset of the YAML node at a path, or of its nearest existing parent (for missing keys). */
function nodeStart(doc: Document, path: string[]): number | undefined {
  for (let depth = path.length; depth >= 0; depth--) {
    const parentPath = path.slice(0, depth - 1);
    const parent = depth === 0 ? undefined : doc.getIn(parentPath, true);
    if (depth > 0 && isMap(parent)) {
      const pair = parent.items.find(
        (p) => isScalar(p.key) && String(p.key.value) === path[depth - 1],
      );
      if (pair && isScalar(pair.key)) return pair.key.range?.[0];
    }
    const node =
      depth === 0 ? doc.contents : (doc.getIn(path.slice(0, depth), true) as Node | undefined);
    if (node && typeof node === 'object' && 'range' in node && node.range) return node.range[0];
  }
  return undefined;
}

function valueAt(doc: Document, path: string[]): unknown {
  const node = doc.getIn(path, true);
  return isScalar(node) ? node.value : node === undefined ? undefined : node;
}
