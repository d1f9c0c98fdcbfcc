import { createHash } from 'node:crypto';
import {
  closest,
  type DataType,
  FIELDS,
  fieldPaths,
  PREMADE_VIEWS,
  premadeView,
  resolveField,
  type UnknownField,
  unknownFieldsWarning,
} from '../../catalog.js';
import { QueryError } from '../../errors.js';
import { destinations } from '../../load/index.js';
import { checkQuery } from '../../query/index.js';
import { foldCase, type NamingStyle, snakeCase } from '../../schema/naming.js';
import type { ColumnType } from '../../schema/types.js';
import { autotraceViewMessage, viewCarriesPeopleKeys } from './autotrace-view.js';
import type {
  ColumnHint,
  JobSpec,
  LoadSettings,
  RawJob,
  RawPipeline,
  SchemaContract,
  TableClaim,
} from './spec-format.js';
import { checkRealTime } from './spec-realtime.js';

/**
 * One job of a pipeline file, checked and resolved: each check below throws its first mistake
 * (through `fail`, which names the file, line and field), and `check` notes it and goes on, so
 * that one round of `validate` says all of a job's mistakes.
 */

type Fail = (message: string, path: string[]) => never;

export interface JobContext {
  fail: Fail;
  /** A warning about a line of the file (`file:line: path: message`). */
  warnAt: (message: string, path: string[]) => void;
  /** `validate`: nothing can be asked of the service, so a view must be known here. */
  offline: boolean;
  /** The tables the jobs write, by role (checked against each other by table-names.ts). */
  tables: TableClaim[];
  /** Where what is worth saying but not refusing goes. */
  warnings: string[];
  /** The pipeline's `schema:`, which a job's own overrides key by key. */
  contract: RawPipeline['schema'];
  /** `strict_fields`: a field the catalogue does not list is refused rather than a warning. */
  strictFields: boolean;
  /** Runs a check, noting the mistake it throws: undefined then, and the job's checks go on. */
  check: <T>(work: () => T) => T | undefined;
}

/** What happens to a field the catalogue does not list, said after each warning of one. */
const STRICT_HINT = 'strict_fields: true refuses such fields';

/** A job's view: declared under `views:`, pre-made, or left to the service. */
interface JobView {
  declared: { fields: string[] } | undefined;
  /** The fields the job's view selects, when known here (declared, or pre-made). */
  fields: readonly string[] | undefined;
}

/** A job, and before it the refresh step its `refresh:` declares (`<job>.refresh`). */
export function resolveJob(raw: RawPipeline, name: string, j: RawJob, ctx: JobContext): JobSpec[] {
  const job = resolveOne(raw, name, j, ctx);
  if (j.refresh === undefined) return [job];
  const step = refreshStep(raw, job, j.refresh);
  return [step, { ...job, refreshedBy: step.name }];
}

/**
 * The targeted update a job's `refresh:` declares, as a step of its own: its query and records
 * (the job's, unless it says), bought under the credit guard and the budgets before the job,
 * recorded in the state tables as the job's download is, and waited for until the service has
 * refreshed the records. It writes no table.
 */
function refreshStep(
  raw: RawPipeline,
  job: JobSpec,
  refresh: NonNullable<RawJob['refresh']>,
): JobSpec {
  const query = refresh.query ?? job.query;
  const records =
    refresh.records === undefined
      ? job.records
      : refresh.records === 'all'
        ? undefined
        : refresh.records;
  return {
    ...job,
    name: `${job.name}.refresh`,
    kind: 'targeted_update',
    refreshes: job.name,
    query,
    records,
    view: undefined,
    format: 'json',
    auto_trace: false,
    address_matching: undefined,
    only_traceable: undefined,
    scrape: false,
    max_credits: refresh.max_credits,
    max_rejects: undefined,
    incremental: undefined,
    columns: {},
    downloadHash: hash({
      kind: 'targeted_update',
      api: raw.source.api,
      type: job.type,
      query,
      records: records ?? 'all',
    }),
    loadHash: '',
  };
}

function resolveOne(raw: RawPipeline, name: string, j: RawJob, ctx: JobContext): JobSpec {
  const { check } = ctx;
  const { view, onlyTraceable } = checkJobSettings(raw, name, j, ctx);
  const query = j.query ?? 'keys:*';
  check(() => checkJobQuery(name, j, query, ctx));
  const keys = Array.isArray(j.key) ? j.key : [j.key];
  if (j.write === 'merge' && j.people_keys_from === undefined) {
    check(() => checkMergeKeys(name, j, keys, view, ctx));
  }
  if (j.incremental !== undefined) check(() => checkIncremental(name, j, view, ctx.fail));
  const table = check(() => tableOf(name, j, ctx, raw.naming)) ?? j.table ?? name;
  const columns = check(() => columnHints(name, j, ctx)) ?? {};
  const downloadHash = downloadHashOf(raw, j, { query, view, onlyTraceable });
  const loadSettings = loadSettingsOf(raw, j, { table, keys, columns });
  const { refresh: _refresh, require_people_data: _old, notify: _notify, ...rest } = j;
  return {
    ...rest,
    ...(onlyTraceable === undefined ? {} : { only_traceable: onlyTraceable }),
    name,
    kind: j.scrape ? 'scrape' : 'download',
    records: j.records === 'all' ? undefined : j.records,
    query,
    table,
    key: j.people_keys_from ? ['people_key'] : keys,
    columns,
    schema: contractOf(ctx.contract, j.schema),
    downloadHash,
    loadSettings,
    loadHash: hash(loadSettings),
  };
}

/**
 * The first checks of a job, in the order `validate` says their mistakes: the API version, the
 * real-time settings, the refresh query, the view (and what auto_trace needs of it), the flags
 * of properties, the owner lookup and nested tables. Gives the job's view and its
 * `only_traceable` (under either of its names).
 */
function checkJobSettings(
  raw: RawPipeline,
  name: string,
  j: RawJob,
  ctx: JobContext,
): { view: JobView; onlyTraceable: boolean | undefined } {
  const { fail, check } = ctx;
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  if (raw.source.api === 'v3') check(() => checkV3Job(raw, name, j, fail, ctx.offline));
  check(() => checkRealTime(raw, name, j, fail));
  if (j.refresh?.query !== undefined) {
    const refreshQuery = j.refresh.query;
    check(() => checkJobQuery(name, j, refreshQuery, ctx, 'refresh.query'));
  }
  const view = check(() => checkView(raw, name, j, ctx)) ?? {
    declared: undefined,
    fields: undefined,
  };
  if (j.auto_trace && j.view !== undefined && view.fields && !viewCarriesPeopleKeys(view.fields))
    check(() => fail(autotraceViewMessage(j.view!, !view.declared), at('view')));
  const onlyTraceable = check(() => onlyTraceableOf(name, j, ctx)) ?? j.only_traceable;
  if (j.type !== 'properties') {
    for (const key of [
      'auto_trace',
      'address_matching',
      'only_traceable',
      'require_people_data',
    ] as const) {
      if (j[key] !== undefined && j[key] !== false)
        check(() => fail(`${key} applies to properties only`, at(key)));
    }
  }
  check(() => checkOwnerLookup(raw, name, j, fail));
  if (j.nested === 'tables' && j.write === 'merge' && Array.isArray(j.key) && j.key.length > 1) {
    check(() =>
      fail(
        'nested: tables links child rows by one key column; use one key or nested: json',
        at('key'),
      ),
    );
  }
  return { view, onlyTraceable };
}

/**
 * What names the job's download in the state tables: a run re-attaches to an unfinished one of
 * the same hash. Its keys and their order are part of it, and must not move.
 */
function downloadHashOf(
  raw: RawPipeline,
  j: RawJob,
  of: { query: string; view: JobView; onlyTraceable: boolean | undefined },
): string {
  return hash({
    api: raw.source.api,
    type: j.type,
    query: of.query,
    records: j.records,
    view: j.view ?? null,
    viewFields: of.view.declared?.fields ?? null,
    format: j.format,
    auto_trace: j.auto_trace,
    address_matching: j.address_matching ?? null,
    // Under the flag's old name, so that a download started before the rename re-attaches.
    require_people_data: of.onlyTraceable ?? null,
    // Only when set, so that the jobs of a file written before scrapes keep their hash.
    ...(j.scrape ? { kind: 'scrape' } : {}),
  });
}

/**
 * How the job's rows are written; its hash (`loadHash`) says when a table was loaded otherwise.
 * Its keys and their order are part of the hash, and must not move.
 */
function loadSettingsOf(
  raw: RawPipeline,
  j: RawJob,
  of: { table: string; keys: string[]; columns: Record<string, ColumnType> },
): LoadSettings {
  return {
    table: of.table,
    write: j.write,
    nested: j.nested,
    key: of.keys,
    people_table: j.people_table ?? null,
    // Only when set, so that the jobs of a file written before hints keep their hash.
    ...(Object.keys(of.columns).length > 0 ? { columns: sortedEntries(of.columns) } : {}),
    ...(raw.naming === 'snake_case' ? { naming: raw.naming } : {}),
  };
}

/**
 * The job's query as the service would take it: a syntax error or a value that cannot apply
 * fails the file; a field the catalogue does not list is a warning (the service may know it),
 * or fails the file under strict_fields.
 */
function checkJobQuery(
  name: string,
  j: RawJob,
  query: string,
  ctx: JobContext,
  key: 'query' | 'refresh.query' = 'query',
): void {
  try {
    const { unknown } = checkQuery(query, j.type, { strict: ctx.strictFields });
    if (unknown.length > 0) {
      warn(
        ctx,
        `jobs.${name}.${key}: ${unknownFieldsWarning(unknown, j.type, `the query is sent as written and the service decides; ${STRICT_HINT}`)}`,
      );
    }
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    ctx.fail(`${error.message}\n${error.excerpt.replace(/^/gm, '    ')}`, [
      'jobs',
      name,
      ...key.split('.'),
    ]);
  }
}

/** A warning, once: a view two jobs use is checked for each. */
function warn(ctx: JobContext, warning: string): void {
  if (!ctx.warnings.includes(warning)) ctx.warnings.push(warning);
}

/**
 * `only_traceable`, the name the service's autotrace guide gives the flag; `require_people_data`,
 * the name sluice used before, is still read, with a warning that names its line.
 */
function onlyTraceableOf(name: string, j: RawJob, ctx: JobContext): boolean | undefined {
  const old = j.require_people_data;
  if (old === undefined) return j.only_traceable;
  const path = ['jobs', name, 'require_people_data'];
  if (j.only_traceable !== undefined && j.only_traceable !== old) {
    ctx.fail(
      `require_people_data (the old name of only_traceable) says ${old}, only_traceable ${j.only_traceable}: keep only_traceable`,
      path,
    );
  }
  ctx.warnAt(
    'require_people_data is deprecated: the service calls it only_traceable; rename it',
    path,
  );
  return j.only_traceable ?? old;
}

function checkView(raw: RawPipeline, name: string, j: RawJob, ctx: JobContext): JobView {
  const { fail } = ctx;
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  const declared = j.view && Object.hasOwn(raw.views, j.view) ? raw.views[j.view] : undefined;
  const premade = j.view && !declared ? premadeView(j.view) : undefined;
  if (premade && premade.type !== j.type) {
    fail(`view '${j.view}' is a pre-made view of ${premade.type}, not ${j.type}`, at('view'));
  }
  if (j.view && !declared && !premade && ctx.offline) {
    const premadeNames = Object.keys(PREMADE_VIEWS).filter(
      (n) => PREMADE_VIEWS[n]!.type === j.type,
    );
    const guess = closest(j.view, [...Object.keys(raw.views), ...premadeNames]);
    fail(
      `view '${j.view}' is not declared under views: nor a pre-made view of ${j.type}${guess ? `; did you mean '${guess}'?` : ''} (plan and run also take a view the service lists)`,
      at('view'),
    );
  }
  const unknown: UnknownField[] = [];
  declared?.fields.forEach((field, i) => {
    const path = field.endsWith(':*') ? field.slice(0, -2) : field;
    if (resolveField(j.type, path)) return;
    if (ctx.strictFields) {
      fail(
        `field '${field}' of view '${j.view}' is not a field of ${j.type} (used by job '${name}')`,
        ['views', j.view!, 'fields', String(i)],
      );
    }
    unknown.push({ field, suggestion: closest(path, fieldPaths(j.type)) });
  });
  if (unknown.length > 0) {
    warn(
      ctx,
      `views.${j.view}.fields: ${unknownFieldsWarning(unknown, j.type, `the view is sent as written and the service decides; its data is typed as it comes; ${STRICT_HINT}`)}`,
    );
  }
  return { declared, fields: declared?.fields ?? premade?.fields };
}

/** `people_keys_from`: an owner lookup follows a properties job of the same file. */
function checkOwnerLookup(raw: RawPipeline, name: string, j: RawJob, fail: Fail): void {
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  if (j.people_keys_from === undefined) {
    if (j.query === undefined) fail('a query is required, e.g. city:Austin', at());
    return;
  }
  const from = raw.jobs[j.people_keys_from];
  const names = Object.keys(raw.jobs);
  if (j.type !== 'people') fail('people_keys_from applies to jobs of type people', at('type'));
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
}

/**
 * The merge key must come with the data, or every row is rejected after the credits are spent:
 * checked against the view's fields, or the data type's.
 */
function checkMergeKeys(
  name: string,
  j: RawJob,
  keys: string[],
  view: JobView,
  ctx: JobContext,
): void {
  const { fail } = ctx;
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  const top = view.fields && new Set(view.fields.map((f) => f.replace(/:\*$/, '').split('.')[0]!));
  for (const key of keys) {
    if (top && !top.has(key)) {
      fail(
        `merge key '${key}' is not a field of view '${j.view}' (${view.fields!.join(', ')}): ${view.declared ? 'add it to the view, or choose another key' : 'choose another key, or a view that has it'}`,
        at('key'),
      );
    } else if (!top && !Object.hasOwn(FIELDS[j.type], key)) {
      const guess = closest(key, Object.keys(FIELDS[j.type]));
      if (ctx.strictFields) {
        fail(
          `merge key '${key}' is not a field of ${j.type}${guess ? `; did you mean '${guess}'?` : ''}`,
          at('key'),
        );
      }
      warn(
        ctx,
        `jobs.${name}.key: ${unknownFieldsWarning([{ field: key, suggestion: guess }], j.type, `rows merge on it as the data has it, and a record without it is rejected; ${STRICT_HINT}`)}`,
      );
    }
  }
}

function checkIncremental(name: string, j: RawJob, view: JobView, fail: Fail): void {
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  const cursor = j.incremental!.cursor;
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
  if (view.fields && !view.fields.some((f) => f.replace(/:\*$/, '') === cursor)) {
    fail(
      `cursor '${cursor}' is not in view '${j.view}': ${view.declared ? "add it to the view's fields" : 'choose a view that has it'}, or the run cannot know how far it got`,
      at('incremental', 'cursor'),
    );
  }
}

/**
 * The job's table. A name the destination keeps for itself is refused here, before anything is
 * bought: the load could never make its table. Child and link tables begin with these names.
 */
function tableOf(name: string, j: RawJob, ctx: JobContext, naming: NamingStyle): string {
  const { fail } = ctx;
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  const reserved = (given: string, what: string, path: string[], fix: string) => {
    const owner =
      reservedBy(given) ?? (naming === 'snake_case' ? reservedBy(snakeCase(given)) : undefined);
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
  ctx.tables.push(...claimsOf(name, j, table));
  return table;
}

/**
 * The tables a job writes, by role: its own (an owner lookup's is the people table it merges
 * into), and the people table autotrace fills. Each at the field that names it, or would.
 */
function claimsOf(name: string, j: RawJob, table: string): TableClaim[] {
  const at = (key: string) => ['jobs', name, key];
  if (j.people_keys_from !== undefined) {
    const by =
      j.table !== undefined ? 'table' : j.people_table !== undefined ? 'people_table' : undefined;
    return [
      {
        table,
        role: 'people',
        job: name,
        path: at(by ?? 'people_keys_from'),
        ...(by === undefined ? { implied: true } : {}),
      },
    ];
  }
  const own: TableClaim = {
    table,
    role: 'table',
    job: name,
    path: at('table'),
    ...(j.table === undefined ? { implied: true } : {}),
  };
  if (!j.auto_trace) return [own];
  const people: TableClaim =
    j.people_table === undefined
      ? { table: 'people', role: 'people', job: name, path: at('auto_trace'), implied: true }
      : { table: j.people_table, role: 'people', job: name, path: at('people_table') };
  return [own, people];
}

const HINT_TYPES: Record<ColumnHint, ColumnType> = {
  text: 'text',
  integer: 'integer',
  double: 'real',
  real: 'real',
  boolean: 'boolean',
  timestamp: 'timestamp',
  json: 'json',
};

/**
 * The job's `columns:` as column types. A name the data type does not list is kept (the service
 * sends fields its catalogue lacks) with a warning, which says the likely name it meant.
 */
function columnHints(name: string, j: RawJob, ctx: JobContext): Record<string, ColumnType> {
  const { fail, warnings } = ctx;
  const out: Record<string, ColumnType> = Object.create(null);
  if (j.columns !== undefined && j.people_keys_from !== undefined) {
    fail(
      "columns: pins the job's own table; an owner lookup merges into the people table, whose columns come from autotrace",
      ['jobs', name, 'columns'],
    );
  }
  if (j.auto_trace && j.columns !== undefined && Object.hasOwn(j.columns, 'people')) {
    fail('people holds the owners autotrace puts in the people table: it cannot be pinned', [
      'jobs',
      name,
      'columns',
      'people',
    ]);
  }
  for (const [field, hint] of Object.entries(j.columns ?? {})) {
    out[field] = HINT_TYPES[hint];
    if (!knownColumn(j.type, field)) {
      const guess = closest(field, Object.keys(FIELDS[j.type]));
      const said = `not a field of ${j.type}${guess ? ` (did you mean '${guess}'?)` : ''}`;
      if (ctx.strictFields) fail(said, ['jobs', name, 'columns', field]);
      warnings.push(
        `jobs.${name}.columns.${field}: ${said}; the type applies if the data has it; ${STRICT_HINT}`,
      );
    }
  }
  return out;
}

/** A top-level field of the data type, or a flattened one (`address__city`). */
function knownColumn(type: DataType, column: string): boolean {
  return (
    Object.hasOwn(FIELDS[type], column) ||
    resolveField(type, column.replaceAll('__', '.')) !== undefined
  );
}

function contractOf(pipeline: RawPipeline['schema'], job: RawJob['schema']): SchemaContract {
  return {
    newColumns: job?.new_columns ?? pipeline?.new_columns ?? 'evolve',
    typeChanges: job?.type_changes ?? pipeline?.type_changes ?? 'widen',
  };
}

function sortedEntries<T>(record: Record<string, T>): [string, T][] {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The v3 API's pre-made views, by the names its guides and its customers' clients use
 * (the service's interface names the first seven); the catalogue's PREMADE_VIEWS holds them
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
  for (const key of ['only_traceable', 'require_people_data'] as const) {
    if (j[key]) fail(`${key} needs the v4 API`, at(key));
  }
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
 * Who reserves a table name, or undefined when it is free: sluice's state tables, and what every
 * destination keeps for itself (`DestinationEntry.reservedPrefixes`), compared case aside. Every
 * destination's, not only the file's: SLUICE_DESTINATION may send the pipeline to another.
 */
function reservedBy(table: string): string | undefined {
  const folded = foldCase(table);
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
