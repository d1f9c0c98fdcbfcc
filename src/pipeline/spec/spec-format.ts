import { z } from 'zod';
import { CREDIT_TYPES, type CreditType, DATA_TYPES } from '../../catalog.js';
import { defaultDestination, destinationExamples, destinations } from '../../load/index.js';
import type { ColumnType } from '../../schema/types.js';
import type { CredentialSource } from '../../util/env-layers.js';
import { notifySchema, type PipelineNotify } from './spec-notify.js';

/**
 * The pipeline file format: its zod schema (validation, defaults and the JSON Schema for
 * editors), durations, and the keys allowed where, for "did you mean" hints.
 */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `5s`, `2h`, `1h30m`, `500ms`, or a number of seconds. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return value >= 0 ? value * 1000 : undefined;
  const parts = value.trim().match(/\d+(?:\.\d+)?(?:ms|s|m|h|d)/g);
  if (!parts || parts.join('') !== value.trim().replaceAll(' ', '')) return undefined;
  let total = 0;
  for (const part of parts) {
    const m = DURATION.exec(part)!;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return total;
}

const duration = z
  .union([z.string(), z.number()])
  .refine((v) => parseDuration(v) !== undefined, {
    message: "expected a duration such as '5s', '10m', '2h' or a number of seconds",
  })
  .transform((v) => parseDuration(v)!);

/**
 * Jobs in flight at once by default. A job in flight mostly waits for the service to prepare its
 * download, polled every few seconds; loads take turns (one writer) or are bounded on their own.
 * A job over the bound is not asked for until one in flight ends, so a pipeline of more jobs
 * takes two downloads' time: with 8, ten jobs took 1.65x their slowest alone, every job in
 * flight 1.21x (docs/speed.md). 16 keeps a pipeline of that size waiting for its slowest
 * download only, and still bounds the requests a large one sends.
 */
export const DEFAULT_PARALLEL_JOBS = 16;

const identifier = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_]*$/,
    'expected a name of letters, digits and underscores, not starting with a digit',
  )
  .max(63);

export const source = z.strictObject({
  api: z.enum(['v4', 'v3']).default('v4').describe('API version of the service'),
  url: z
    .string()
    .url('expected the URL of the v4 or v3 root, e.g. http://127.0.0.1:8787/v4')
    .optional(),
  email: z.string().optional().describe('v4 login email'),
  password: z.string().optional().describe('v4 password: use ${SLUICE_PASSWORD}, never a literal'),
  token: z
    .string()
    .optional()
    .describe('API token (v3; on v4 instead of email and password): use ${SLUICE_API_TOKEN}'),
});

/** A destination's URL and the settings beside it that its kind declares (checked by the kind). */
const destinationObject = z.strictObject({
  url: z.string().describe(destinationExamples()),
  ...Object.fromEntries(
    destinations().flatMap((d) =>
      Object.entries(d.settings ?? {}).map(([name, setting]) => [
        name,
        z.unknown().optional().describe(`${d.displayName}: ${setting.describe}`),
      ]),
    ),
  ),
});

/**
 * A number where one is expected, also from `${VAR}` (whose value is text): `records: ${N}`.
 * Only whole text numbers are taken; anything else is left for the schema to refuse.
 */
const numeric = <T extends z.ZodTypeAny>(schema: T) =>
  z.preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v), schema);

/** A boolean, also from `${VAR}`: `true` / `false`. */
const flag = <T extends z.ZodTypeAny>(schema: T) =>
  z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), schema);

const incremental = z.strictObject({
  cursor: z.string().min(1).describe("a date field of the job's data type, e.g. dateUpdated"),
  start: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}/, 'expected a date such as 2026-01-01 or 2026-01-01T00:00:00Z')
    .refine((s) => !Number.isNaN(Date.parse(s)), 'not a date: expected one such as 2026-01-01')
    .optional()
    .describe("the first run's lower bound (default: everything)"),
  lookback: duration
    .default(0)
    .describe('re-read this much before the cursor, for late writes, e.g. 1d'),
});

const poll = z.strictObject({
  interval: duration.default(5000).describe('time between status checks, e.g. 5s'),
  max_interval: duration.default(60_000).describe('backoff ceiling between checks'),
  timeout: duration.default(2 * 3_600_000).describe('give up waiting after this long, e.g. 2h'),
  on_timeout: z
    .enum(['cancel', 'leave'])
    .default('leave')
    .describe('cancel the download on timeout, or leave it for a later run'),
});

export const BUDGET_PERIODS = ['day', 'week', 'month', 'year'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** `50000/month`: credits, a slash, a period (spaces around the slash allowed). */
export const BUDGET_AMOUNT = new RegExp(`^\\s*(\\d+)\\s*/\\s*(${BUDGET_PERIODS.join('|')})\\s*$`);
const BUDGET_HINT = `expected credits per period, such as 50000/month (periods: ${BUDGET_PERIODS.join(', ')})`;

const budgetAmount = z.string().regex(BUDGET_AMOUNT, BUDGET_HINT);
/** One budget of a credit type, or several of different periods (`[2000/day, 40000/month]`). */
const budgetValue = z.union([budgetAmount, z.array(budgetAmount).min(1)], {
  error: `${BUDGET_HINT}, or a list of them`,
});

const budget = z
  .strictObject({
    business: budgetValue.optional(),
    people: budgetValue.optional(),
    product: budgetValue.optional(),
    property: budgetValue.optional(),
  } satisfies Record<CreditType, unknown>)
  .describe(
    'credits the pipeline may spend per credit type and calendar period (UTC), e.g. { property: 50000/month, people: 2000/week }',
  );

/**
 * Column types a job may pin (`columns:`), the same for every destination: `double` and `real`
 * are one type, a floating-point number.
 */
export const COLUMN_HINTS = [
  'text',
  'integer',
  'double',
  'real',
  'boolean',
  'timestamp',
  'json',
] as const;
export type ColumnHint = (typeof COLUMN_HINTS)[number];

const columnHints = z
  .record(
    z.string().min(1),
    z.enum(COLUMN_HINTS, { error: `expected one of ${COLUMN_HINTS.join(', ')}` }),
  )
  .describe(
    'column types to pin, by field name, e.g. { latitude: double, yearBuilt: integer }: a value that does not fit is rejected with its reason',
  );

const schemaContract = z
  .strictObject({
    new_columns: z
      .enum(['evolve', 'freeze', 'discard'])
      .optional()
      .describe(
        'fields a table has no column for: evolve adds columns, freeze fails the job, discard drops their values',
      ),
    type_changes: z
      .enum(['widen', 'freeze'])
      .optional()
      .describe('values a column type cannot hold: widen the column, or freeze: fail the job'),
  })
  .describe("what a load may change in a table's columns (default: evolve and widen)");

/**
 * A targeted update before a job's download (`refresh:`): the service refreshes the records it
 * matches from their sources, and the job then downloads them fresh. `true` takes the defaults.
 */
const refresh = z.preprocess(
  (v) => (v === true || v === 'true' ? {} : v),
  z.strictObject({
    query: z
      .string()
      .min(1, 'a query is required, e.g. city:Austin')
      .optional()
      .describe("the records to refresh (default: the job's query)"),
    records: numeric(
      z.union([z.literal('all'), z.number().int().positive()], {
        error: "expected a whole number of records (at least 1), or 'all'",
      }),
    )
      .optional()
      .describe("how many of them (default: the job's records)"),
    max_credits: numeric(z.number().int().nonnegative())
      .optional()
      .describe('refuse the refresh if it would spend more'),
  }),
);

const job = z.strictObject({
  type: z.enum(DATA_TYPES).describe('data type: properties, businesses, products or people'),
  query: z.string().min(1, 'a query is required, e.g. city:Austin').optional(),
  records: numeric(
    z.union([z.literal('all'), z.number().int().positive()], {
      error: "expected a whole number of records (at least 1), or 'all'",
    }),
  )
    .default('all')
    .describe("number of records to download, or 'all'"),
  view: z.string().optional().describe('a view declared under views:, or a pre-made view'),
  format: z.enum(['csv', 'json']).default('json'),
  auto_trace: flag(z.boolean()).default(false).describe('properties only: attach matched owners'),
  address_matching: z.enum(['on', 'off', 'retry']).optional(),
  only_traceable: flag(z.boolean())
    .optional()
    .describe('properties on v4: only records with people data (autotrace)'),
  require_people_data: flag(z.boolean())
    .optional()
    .describe('deprecated: the old name of only_traceable'),
  table: identifier.optional().describe('destination table, default the job name'),
  write: z.enum(['append', 'replace', 'merge']).default('merge'),
  key: z
    .union([identifier, z.array(identifier).min(1)], {
      error: 'expected a column name, or a list of them (e.g. [id, province])',
    })
    .default('id')
    .describe('merge key column(s)'),
  max_credits: numeric(z.number().int().nonnegative())
    .optional()
    .describe('refuse the job if it would spend more'),
  max_rejects: numeric(z.number().int().nonnegative())
    .optional()
    .describe('fail the job past this many rejected rows'),
  nested: z
    .enum(['tables', 'json'])
    .default('tables')
    .describe('nested values as child tables or JSON columns'),
  people_table: identifier.optional().describe("autotrace: the people table, default 'people'"),
  people_keys_from: identifier
    .optional()
    .describe(
      'people jobs: look up the owners of the properties loaded by this job (by their people keys) instead of a query',
    ),
  incremental: incremental
    .optional()
    .describe('download only what changed since the last run, by a date cursor (merge jobs)'),
  scrape: flag(z.boolean())
    .default(false)
    .describe(
      "v4: the records come from a real-time scrape (POST /scrape) instead of a download, loaded as a download's are",
    ),
  refresh: refresh
    .optional()
    .describe(
      'v4: a targeted update of the records before the download, e.g. { query: ..., records: 500 }',
    ),
  columns: columnHints.optional(),
  schema: schemaContract.optional(),
  notify: notifySchema
    .optional()
    .describe("where this job's alerts go, in place of the pipeline's notify:"),
  poll: poll.default({
    interval: 5000,
    max_interval: 60_000,
    timeout: 2 * 3_600_000,
    on_timeout: 'leave',
  }),
});

export const pipelineSchema = z.strictObject({
  version: z.literal(1, 'the only pipeline file version is 1'),
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected letters, digits, dots, dashes and underscores')
    .max(100),
  source,
  destination: z
    .union([z.string(), destinationObject], {
      error: `expected a URL (e.g. ${defaultDestination('out')}), or { url: ..., and its settings }`,
    })
    .default(defaultDestination('sluice')),
  resume_window: duration
    .default(6 * 3_600_000)
    .describe('a run this soon after an interrupted or failed one resumes it (0: never)'),
  max_parallel_jobs: numeric(z.number().int().min(1).max(64))
    .default(DEFAULT_PARALLEL_JOBS)
    .describe('jobs whose downloads the service prepares at once (1: one after another)'),
  budget: budget.optional(),
  notify: notifySchema.optional(),
  naming: z
    .enum(['keep', 'snake_case'])
    .default('keep')
    .describe(
      "table and column names: keep the service's field names, or snake_case (firstName -> first_name)",
    ),
  schema: schemaContract.optional(),
  strict_fields: flag(z.boolean())
    .default(false)
    .describe(
      "refuse a field sluice's catalogue does not list (in queries, views, keys, columns) instead of warning and sending it",
    ),
  views: z
    .record(z.string().min(1), z.strictObject({ fields: z.array(z.string().min(1)).min(1) }))
    .default({}),
  jobs: z
    .record(identifier, job)
    .refine((jobs) => Object.keys(jobs).length > 0, 'declare at least one job'),
});

export type RawPipeline = z.output<typeof pipelineSchema>;
export type RawJob = z.output<typeof job>;

/** What a load may change in a table's columns (`schema:`, the job's over the pipeline's). */
export interface SchemaContract {
  newColumns: 'evolve' | 'freeze' | 'discard';
  typeChanges: 'widen' | 'freeze';
}

/**
 * What a job buys: a download (the search's bulk download), a scrape (records in the answer of
 * POST /scrape) or a targeted update (records refreshed on the service: a `refresh:` step).
 */
export type JobKind = 'download' | 'scrape' | 'targeted_update';

export interface JobSpec
  extends Omit<
    RawJob,
    | 'records'
    | 'key'
    | 'table'
    | 'query'
    | 'columns'
    | 'schema'
    | 'refresh'
    | 'require_people_data'
    | 'notify'
  > {
  name: string;
  kind: JobKind;
  /** A `refresh:` step: the job whose records it refreshes (which waits for it). */
  refreshes?: string;
  /** A job with `refresh:`: the name of its refresh step (`<job>.refresh`), run before it. */
  refreshedBy?: string;
  /** For an owner lookup job, a stand-in: its queries are built from people keys. */
  query: string;
  /** Undefined: every matching record. */
  records: number | undefined;
  table: string;
  key: string[];
  /** Pinned column types by field name (`columns:`; `double` is `real`). */
  columns: Record<string, ColumnType>;
  /** The contract of the job's tables (`schema:`), the defaults filled in. */
  schema: SchemaContract;
  /** Hash of what decides the download; a later run re-attaches only when it is unchanged. */
  downloadHash: string;
  /**
   * What decides where and how a download's rows land, recorded with each download so that a
   * change can be named (see `loadChanges`).
   */
  loadSettings: LoadSettings;
  /**
   * Hash of `loadSettings`: a download half loaded under one must not be finished under another.
   */
  loadHash: string;
}

/**
 * Where and how a job's rows land. Hashed as it is (`loadHash`), key order included: the keys
 * added since the first sluice (`columns`, `naming`) are there only when set, so that the jobs
 * of files written before them keep their hash.
 */
export interface LoadSettings {
  table: string;
  write: 'append' | 'replace' | 'merge';
  nested: 'tables' | 'json';
  key: string[];
  people_table: string | null;
  /** Pinned column types (`columns:`), sorted by field. */
  columns?: [string, ColumnType][];
  /** `naming:` when not `keep`. */
  naming?: 'snake_case';
}

/** A credit budget: at most `limit` credits of `type` per calendar `period` (UTC). */
export interface Budget {
  type: CreditType;
  limit: number;
  period: BudgetPeriod;
}

export interface PipelineSpec {
  file: string;
  /** The pipeline file's folder: relative paths of file destinations start here. */
  baseDir: string;
  name: string;
  source: z.output<typeof source>;
  /** Where the data goes, and the destination's own settings beside the URL (`schema:` ...). */
  destination: { url: string; settings: Readonly<Record<string, unknown>> };
  /** A run this soon (ms) after an interrupted or failed one finishes it instead of starting anew. */
  resumeWindow: number;
  /** Jobs in flight at once (`max_parallel_jobs`). */
  maxParallelJobs: number;
  /** What a lenient load noted instead of failing (e.g. credentials not set). */
  warnings: string[];
  views: Record<string, { fields: string[] }>;
  jobs: JobSpec[];
  /** The `budget:` key, one entry per credit type and period, by credit type. */
  budgets: Budget[];
  /** How field names become table and column names (`naming:`). */
  naming: 'keep' | 'snake_case';
  /** The tables its jobs write and the role of each, with where the file names them. */
  tables: TableClaim[];
  /**
   * `strict_fields` (or `--strict-fields`): a field the catalogue does not list is refused, not
   * a warning.
   */
  strictFields: boolean;
  /** Where the service's and the database's credentials came from (never their values). */
  credentials: CredentialSource[];
  /** Where alerts go: the file's `notify:` (else the environment's), and each job's own. */
  notify: PipelineNotify;
}

/** `table`: a job's own table; `people`: a people table autotrace and owner lookups share. */
export type TableRole = 'table' | 'people';

/** A table a job writes, as its pipeline file says it (or implies it, by default). */
export interface TableClaim {
  /** Its logical name (the destination spells it: `naming:`). */
  table: string;
  role: TableRole;
  job: string;
  /** The field that names it (or, by default, the nearest there is), and its line. */
  path: string[];
  line?: number;
  /** Named by default (the job's name; autotrace's `people`), not by the file. */
  implied?: boolean;
}

/** JSON Schema of the pipeline format, for editors (`sluice schema`). */
export function pipelineJsonSchema(): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'sluice pipeline',
    ...z.toJSONSchema(pipelineSchema, { io: 'input', unrepresentable: 'any' }),
  };
}

/** The keys allowed at a path of the pipeline format, for "did you mean" hints. */
export function knownKeys(path: string[]): string[] {
  const shapes: Record<string, string[]> = {
    '': Object.keys(pipelineSchema.shape),
    source: Object.keys(source.shape),
    destination: Object.keys(destinationObject.shape),
    job: Object.keys(job.shape),
    poll: Object.keys(poll.shape),
    incremental: Object.keys(incremental.shape),
    refresh: ['query', 'records', 'max_credits'],
    schema: Object.keys(schemaContract.shape),
    budget: [...CREDIT_TYPES],
    view: ['fields'],
    notify: Object.keys(notifySchema.shape),
  };
  if (path.length === 0) return shapes['']!;
  if (path[0] === 'jobs' && path.length === 2) return shapes.job!;
  if (path[0] === 'jobs' && path[2] === 'poll') return shapes.poll!;
  if (path[0] === 'jobs' && path[2] === 'incremental') return shapes.incremental!;
  if (path[0] === 'jobs' && path[2] === 'refresh') return shapes.refresh!;
  if (path[0] === 'jobs' && path[2] === 'schema') return shapes.schema!;
  if (path[0] === 'jobs' && path[2] === 'notify') return shapes.notify!;
  if (path[0] === 'views' && path.length === 2) return shapes.view!;
  return shapes[path[0]!] ?? [];
}
