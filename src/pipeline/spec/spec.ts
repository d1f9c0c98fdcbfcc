import { readFile } from 'node:fs/promises';
import { dirname, resolve as resolvePath } from 'node:path';
import {
  type Document,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  type Scalar,
} from 'yaml';
import type { z } from 'zod';
import { CREDIT_TYPES, closest } from '../../catalog.js';
import { urlApiVersion } from '../../client/index.js';
import { PipelineSpecError, SluiceError } from '../../errors.js';
import { destinationEntryOf, destinationExamples, settingProblems } from '../../load/index.js';
import { Naming } from '../../schema/naming.js';
import {
  type CredentialSource,
  type EnvLookup,
  envLookup,
  type SettingOrigin,
} from '../../util/env-layers.js';
import { readSecretFile } from '../../util/secret-file.js';
import {
  BUDGET_AMOUNT,
  type Budget,
  type BudgetPeriod,
  type JobSpec,
  knownKeys,
  type PipelineSpec,
  pipelineSchema,
  type RawPipeline,
  type TableClaim,
} from './spec-format.js';
import { resolveJob } from './spec-job.js';
import { pipelineNotify } from './spec-notify.js';
import { tableNameProblems } from './table-names.js';

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
  /** `--strict-fields`: refuse fields the catalogue does not list, whatever the file says. */
  strictFields?: boolean;
  /**
   * Where `${VAR}` is looked up, with where each value came from (the CLI's: the environment,
   * `--env-file`, the `.env` beside the file). By default `env`, where `VAR_FILE` names a file
   * holding `VAR`.
   */
  lookup?: EnvLookup;
}

/** A job's table as the destination names it (`naming:` applied), for what sluice says. */
export function namedTable(spec: Pick<PipelineSpec, 'naming'>, table: string): string {
  return new Naming(Number.POSITIVE_INFINITY, spec.naming).table(table);
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
  // A file that does not parse has no fields to check; a key written twice is noted below.
  const error = doc.errors.find((e) => e.code !== 'DUPLICATE_KEY');
  if (error !== undefined) {
    throw new PipelineSpecError(`invalid YAML: ${error.message.split('\n')[0]}`, {
      file,
      line: lineOf(error.pos[0]),
      path: '',
    });
  }
  // Every mistake of the file at once, in one round: each stage notes its own, and the next
  // goes on (with the parts in error left out), so that fixing one never reveals another.
  const problems = duplicateKeys(doc.contents, [], { file, lineOf });
  const warnings: string[] = [];
  const lenient = options.source === 'optional';
  const views = options.views ?? 'service';
  const credentials: CredentialSource[] = [];
  interpolate(doc, doc.contents, [], {
    lookup: options.lookup ?? envLookup([{ vars: env }]),
    file,
    lineOf,
    lenient,
    warnings,
    credentials,
    problems,
  });
  let plain: unknown;
  try {
    plain = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    throw new PipelineSpecError(`invalid YAML: ${(error as Error).message}`, { file, path: '' });
  }
  const raw = validated(plain, doc, file, lineOf, problems);
  if (raw === undefined) throw PipelineSpecError.all(distinct(problems));
  const strictFields = options.strictFields === true || raw.data.strict_fields;
  const found = problems.length;
  const spec = resolve(raw.data, file, doc, lineOf, {
    lenient,
    warnings,
    views,
    strictFields,
    lookup: options.lookup ?? envLookup([{ vars: env }]),
    problems,
  });
  // A job or view left out for its own mistake is not also "missing" where it is used.
  const later = problems
    .splice(found)
    .filter((p) => !raw.omitted.some((name) => p.message.includes(`'${name}'`)));
  problems.push(...later);
  if (problems.length > 0) throw PipelineSpecError.all(distinct(problems));
  return { ...spec, credentials };
}

/** One mistake per field: the first noted (a duplicate key, an unset variable) says it best. */
function distinct(problems: readonly PipelineSpecError[]): PipelineSpecError[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    if (seen.has(p.path)) return false;
    seen.add(p.path);
    return true;
  });
}

/**
 * The file checked against the schema. Its mistakes are noted; the pipeline without the jobs,
 * views, keys and optional settings in error is then checked again, so that the rest can be
 * resolved and its mistakes said in the same round. Undefined when nothing is left to resolve
 * (a mistake in `source:`, say).
 */
function validated(
  plain: unknown,
  doc: Document,
  file: string,
  lineOf: (offset: number | undefined) => number | undefined,
  problems: PipelineSpecError[],
): { data: RawPipeline; omitted: string[] } | undefined {
  const parsed = pipelineSchema.safeParse(plain);
  if (parsed.success) return { data: parsed.data, omitted: [] };
  for (const issue of parsed.error.issues) problems.push(...issueErrors(issue, doc, file, lineOf));
  const rest = structuredClone(plain) as Record<string, Record<string, unknown>>;
  const omitted: string[] = [];
  const child = (node: unknown, key: string) =>
    (node as Record<string, unknown> | undefined)?.[key];
  for (const issue of parsed.error.issues) {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      const at = path.reduce<unknown>(child, rest) as Record<string, unknown> | undefined;
      for (const key of issue.keys) delete at?.[key];
    } else if ((path[0] === 'jobs' || path[0] === 'views') && path.length >= 2) {
      delete rest[path[0]]?.[path[1]!];
      omitted.push(path[1]!);
    } else if (path[0] !== undefined && OPTIONAL_SETTINGS.has(path[0])) {
      delete rest[path[0]];
    } else {
      return undefined;
    }
  }
  const again = pipelineSchema.safeParse(rest);
  return again.success ? { data: again.data, omitted } : undefined;
}

/** Top-level keys a pipeline can do without (each has a default, or is optional). */
const OPTIONAL_SETTINGS: ReadonlySet<string> = new Set([
  'destination',
  'resume_window',
  'max_parallel_jobs',
  'budget',
  'naming',
  'schema',
  'strict_fields',
  'views',
]);

/**
 * Keys written twice in one mapping, by name, at the second one's line; the later ones are
 * removed, so that the rest of the file is checked as if each key were written once.
 */
function duplicateKeys(
  node: unknown,
  path: string[],
  at: { file: string; lineOf: (offset: number | undefined) => number | undefined },
): PipelineSpecError[] {
  const found: PipelineSpecError[] = [];
  if (isMap(node)) {
    const first = new Map<string, number | undefined>();
    for (const pair of [...node.items]) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
      if (first.has(key)) {
        const line = first.get(key);
        found.push(
          new PipelineSpecError(
            `duplicate key '${key}'${line === undefined ? '' : ` (first at line ${line})`}: keep one`,
            { file: at.file, line: at.lineOf(offset), path: [...path, key].join('.') },
          ),
        );
        node.items.splice(node.items.indexOf(pair), 1);
        continue;
      }
      first.set(key, at.lineOf(offset));
      found.push(...duplicateKeys(pair.value, [...path, key], at));
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      found.push(...duplicateKeys(item, [...path, String(i)], at));
    });
  }
  return found;
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

/** How `resolve` says the file's mistakes, and what its steps share. */
interface ResolveOptions {
  lenient: boolean;
  warnings: string[];
  views: 'offline' | 'service';
  strictFields: boolean;
  lookup: EnvLookup;
  /** Where each mistake found is noted; the caller throws them all. */
  problems: PipelineSpecError[];
}

/** Throws a mistake at a field of the file, with its line. */
type Fail = (message: string, path: string[]) => never;

/** Runs a check, noting the mistake it throws: undefined then, and the next check goes on. */
type Check = <T>(work: () => T) => T | undefined;

/** Where a mistake is said: the file, and a field's line in it. */
interface FileAt {
  file: string;
  doc: Document;
  lineOf: (offset: number | undefined) => number | undefined;
}

function resolve(
  raw: RawPipeline,
  file: string,
  doc: Document,
  lineOf: (offset: number | undefined) => number | undefined,
  options: ResolveOptions,
): Omit<PipelineSpec, 'credentials'> {
  const fail: Fail = (message, path) => {
    throw new PipelineSpecError(message, {
      file,
      line: lineOf(nodeStart(doc, path)),
      path: path.join('.'),
    });
  };
  // Every mistake of the file at once: each check throws its first, which is kept, and the next
  // check goes on.
  const { problems } = options;
  const check: Check = (work) => {
    try {
      return work();
    } catch (error) {
      if (!(error instanceof PipelineSpecError)) throw error;
      problems.push(error);
      return undefined;
    }
  };
  checkSource(raw, options, fail, check);
  const destination = destinationOfFile(raw.destination);
  if (destinationEntryOf(destination.url) === undefined) {
    check(() => fail(`expected ${destinationExamples()}`, ['destination']));
  }
  for (const { setting, problem } of settingProblems(destination.settings)) {
    check(() => fail(problem, ['destination', setting]));
  }
  const tables: TableClaim[] = [];
  const jobs = resolveJobs(raw, { file, doc, lineOf }, options, { fail, check, tables });
  problems.push(...tableNameProblems(tables, file, raw.name, raw.naming));
  const budgets = check(() => budgetsOf(raw, fail)) ?? [];
  const notify = check(() => pipelineNotify(raw, fail, options.lookup, file)) ?? { jobs: {} };
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
    naming: raw.naming,
    tables,
    strictFields: options.strictFields,
    notify,
  };
}

/**
 * What `source:` must say for `run`: a URL whose API version agrees with `api:`, and the
 * credentials that API takes. Commands that never talk to the service only warn of what is
 * missing.
 */
function checkSource(raw: RawPipeline, options: ResolveOptions, fail: Fail, check: Check): void {
  // Commands that never talk to the service only note what `run` would need.
  // An unset variable or an unreadable secret of the source was noted where it is used.
  const unsetSource = options.problems.some((p) => p.path.startsWith('source.'));
  const need = (message: string, path: string[]) => {
    if (!options.lenient) {
      if (!unsetSource) check(() => fail(message, path));
    } else if (
      !options.warnings.some((w) => /: source\.[^:]*: (environment variable|secret file)/.test(w))
    ) {
      options.warnings.push(`${path.join('.')}: ${message}`);
    }
  };
  if (!raw.source.url) need('is required (the URL of the v4 or v3 root)', ['source', 'url']);
  // The service answers a v3 call at a v4 URL (or the reverse) with a bare 404.
  const named = raw.source.url ? urlApiVersion(raw.source.url) : undefined;
  if (named !== undefined && named !== raw.source.api) {
    check(() =>
      fail(
        `the URL names the ${named} API but api: is ${raw.source.api}, and the service would answer 404: make them agree (api: ${named}, or the ${raw.source.api} root URL)`,
        ['source', 'url'],
      ),
    );
  }
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
}

/**
 * Each job resolved (a job in error is left out, its mistakes noted), and the tables they claim
 * gathered into `tables`, each with its line in the file.
 */
function resolveJobs(
  raw: RawPipeline,
  at: FileAt,
  options: ResolveOptions,
  shared: { fail: Fail; check: Check; tables: TableClaim[] },
): JobSpec[] {
  const { fail, check, tables } = shared;
  const contract = raw.schema;
  const jobs = Object.entries(raw.jobs).flatMap(([name, j]) => {
    const job = check(() =>
      resolveJob(raw, name, j, {
        fail,
        warnAt: (message, path) =>
          options.warnings.push(
            `${at.file}:${at.lineOf(nodeStart(at.doc, path)) ?? '?'}: ${path.join('.')}: ${message}`,
          ),
        offline: options.views === 'offline',
        tables,
        warnings: options.warnings,
        contract,
        strictFields: options.strictFields,
        check,
      }),
    );
    return job ?? [];
  });
  for (const claim of tables) {
    const line = at.lineOf(nodeStart(at.doc, claim.path));
    if (line !== undefined) claim.line = line;
  }
  return jobs;
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

/** The fields whose source `validate` and `status` tell: the service's and the database's. */
const CREDENTIALS = new Set([
  'source.url',
  'source.email',
  'source.password',
  'source.token',
  'destination',
  'destination.url',
]);

/** `${file:PATH}`, `${VAR}` and `${VAR:-default}`. */
const REFERENCE = /\$\{(?:file:([^}]+)|([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}/g;

interface InterpolationContext {
  lookup: EnvLookup;
  file: string;
  lineOf: (offset: number | undefined) => number | undefined;
  lenient: boolean;
  warnings: string[];
  /** Where each credential's value came from, as it is resolved. */
  credentials: CredentialSource[];
  /** Each reference nothing gives, at its line; the field is then left out. */
  problems: PipelineSpecError[];
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in string scalars with the environment's values, and
 * `${file:PATH}` with a mounted secret's (PATH from the pipeline file's folder). Done on the YAML
 * tree, before validation, so an unset variable is reported at its own line.
 */
function interpolate(
  doc: Document,
  node: unknown,
  path: string[],
  context: InterpolationContext,
): void {
  if (isMap(node)) {
    for (const pair of [...node.items]) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      interpolate(doc, pair.value, [...path, key], context);
      // A value left unset (where it is not needed, or noted as a mistake) is as if it were not
      // written.
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
    if (CREDENTIALS.has(path.join('.')) && node.value !== '') {
      context.credentials.push({
        credential: path.join('.'),
        origins: [{ from: 'pipeline_file' }],
      });
    }
  } else if (isScalar(node) && typeof node.value === 'string') {
    substitute(node as Scalar<string>, path, context);
  }
}

/**
 * A scalar's `${...}` references replaced by their values, and where each came from noted for a
 * credential. A reference nothing gives fails at the scalar's line; under `source:`, for a command
 * that never talks to the service, it is noted and the field left out instead.
 */
function substitute(node: Scalar<string>, path: string[], context: InterpolationContext): void {
  const origins: SettingOrigin[] = [];
  let unset = false;
  const where = () => `${context.file}:${context.lineOf(node.range?.[0]) ?? '?'}`;
  const missing = (problem: string, fix: string) => {
    if (context.lenient && path[0] === 'source') {
      context.warnings.push(
        `${where()}: ${path.join('.')}: ${problem} (run needs it; this command does not)`,
      );
      unset = true;
      return '';
    }
    context.problems.push(
      new PipelineSpecError(`${problem}${fix}`, {
        file: context.file,
        line: context.lineOf(node.range?.[0]),
        path: path.join('.'),
      }),
    );
    unset = true;
    return '';
  };
  const value = node.value.replace(
    REFERENCE,
    (_, secretPath: string | undefined, name: string, fallback?: string) => {
      if (secretPath !== undefined) {
        const file = resolvePath(dirname(resolvePath(context.file)), secretPath.trim());
        try {
          const secret = readSecretFile(file);
          origins.push({ from: 'secret_file', file });
          return secret;
        } catch (error) {
          if (!(error instanceof SluiceError)) throw error;
          origins.push({ from: 'unreadable', file });
          return missing(error.message, '');
        }
      }
      let found: ReturnType<EnvLookup>;
      try {
        found = context.lookup(name);
      } catch (error) {
        // A `VAR_FILE` naming a file that cannot be read: said at the line that needs it.
        if (!(error instanceof SluiceError && error.code === 'SLUICE_SECRET_FILE')) throw error;
        origins.push({ from: 'unset', variable: name });
        return missing(error.message, '');
      }
      if (found !== undefined) {
        origins.push(found.origin);
        return found.value;
      }
      if (fallback !== undefined) {
        origins.push({ from: 'pipeline_file', variable: name });
        return fallback;
      }
      origins.push({ from: 'unset', variable: name });
      return missing(
        `environment variable ${name} is not set`,
        path[0] === 'source' ? '' : ` (set it, or give a default: \${${name}:-value})`,
      );
    },
  );
  if (CREDENTIALS.has(path.join('.'))) {
    context.credentials.push({ credential: path.join('.'), origins });
  }
  (node as Scalar<unknown>).value = unset ? UNSET : value;
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
  if (/^(jobs\.[^.]+\.)?notify\.slack$/.test(where) && /\/services\/./.test(value)) {
    return "a Slack webhook's URL is its token, and it is written in the file; use ${SLUICE_NOTIFY_SLACK} (or ${file:PATH}) and set it outside the file";
  }
  if (/^(jobs\.[^.]+\.)?notify\.secret$/.test(where) && value !== '') {
    return "the webhook's signing secret is written in the file; use ${SLUICE_NOTIFY_SECRET} (or ${file:PATH}) and set it outside the file";
  }
  if (where === 'destination' || where === 'destination.url') {
    try {
      const url = new URL(value);
      if (url.password !== '') {
        return 'the database password is written in the file; take it from the environment (postgres://user:${PGPASSWORD}@host/db), or set the whole URL in SLUICE_DESTINATION';
      }
    } catch {
      // Not a URL (a file's path): no password in it.
    }
  }
  return undefined;
}

/** A file's `destination:` (a URL, or `{ url, ...settings }`) as its URL and settings. */
function destinationOfFile(
  given: string | { url: string; [setting: string]: unknown },
): PipelineSpec['destination'] {
  if (typeof given === 'string') return { url: given, settings: {} };
  const { url, ...settings } = given;
  return {
    url,
    settings: Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)),
  };
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
