import { createHash } from 'node:crypto';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { stringify } from 'yaml';
import type { DataType } from '../../catalog.js';

/**
 * `sluice get`: one job from flags, written as the pipeline file it is, so that it runs as a
 * file's job does (runPipeline: the guard, the budgets, the state tables, resume, every file
 * loaded once) and `--save` writes the very text that ran.
 *
 * What makes two `get`s "the same command" (`identity`): the data type, the query, the records,
 * the view, the format and the table. The destination is where the answer is kept: its state
 * tables hold the runs of each identity, so the same command into another database is another
 * purchase, and a database moved or renamed still knows what it loaded. The write mode is left
 * out: it says how rows land, not what is bought, so `--write replace` after a merge of the same
 * records buys nothing (`--fresh` does). Each identity is a run key of the table's pipeline
 * (`get.<table>`): a key that succeeded is not bought again, one that failed is resumed.
 */
export interface OneJob {
  type: DataType;
  query: string;
  records: number | 'all';
  /** The destination's URL as given (a file's relative to `cwd`). */
  into: string;
  /** The destination's `schema` setting (`--schema`). */
  schema?: string;
  /** Default: the data type. */
  table?: string;
  view?: string;
  format: 'json' | 'csv';
  write: 'append' | 'replace' | 'merge';
  source: {
    api: 'v4' | 'v3';
    /** The service root, without credentials. */
    url: string;
    /** An email and password (v4), else the API token. */
    login: boolean;
    email?: string;
  };
}

/** The table a `get` loads: `--table`, else the data type's name. */
export function oneJobTable(job: Pick<OneJob, 'type' | 'table'>): string {
  return job.table ?? job.type;
}

/** The run key of a `get`: its identity, hashed (see OneJob). */
export function oneJobRunKey(job: OneJob): string {
  const identity = {
    type: job.type,
    query: job.query,
    records: job.records,
    view: job.view ?? null,
    format: job.format,
    table: oneJobTable(job),
  };
  return `get:${createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 16)}`;
}

/** The command line that stands for the job, credentials left out (the file's first line). */
export function oneJobCommand(job: OneJob): string {
  const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);
  const parts = ['sluice get', job.type, quote(job.query), '--records', String(job.records)];
  parts.push('--into', quote(withoutPassword(job.into)));
  if (job.schema !== undefined) parts.push('--schema', job.schema);
  if (job.table !== undefined) parts.push('--table', job.table);
  if (job.view !== undefined) parts.push('--view', quote(job.view));
  if (job.format !== 'json') parts.push('--format', job.format);
  if (job.write !== 'merge') parts.push('--write', job.write);
  return parts.join(' ');
}

/**
 * The pipeline file of a `get`, as it would be saved at `file` (relative destination paths are
 * written from that file's folder; `cwd`: the folder they were given from). Secrets are never
 * written: the password and the token are the environment's (`${SLUICE_PASSWORD}`,
 * `${SLUICE_API_TOKEN}`), a database password `${PGPASSWORD}`; the URL and the email default to
 * those used now, so that `sluice run FILE` reaches the same service as the same user.
 */
export function oneJobPipeline(job: OneJob, file: string, cwd: string): string {
  const table = oneJobTable(job);
  const source: Record<string, string> = {
    api: job.source.api,
    url: `\${SLUICE_API_URL:-${job.source.url}}`,
  };
  if (job.source.login) {
    source.email = `\${SLUICE_EMAIL:-${job.source.email ?? ''}}`;
    source.password = '${SLUICE_PASSWORD}';
  } else source.token = '${SLUICE_API_TOKEN}';
  const url = withoutPassword(rebase(job.into, cwd, dirname(resolve(cwd, file))));
  const spec = {
    version: 1,
    name: `get.${table}`,
    source,
    destination: job.schema === undefined ? url : { url, schema: job.schema },
    jobs: {
      [table]: {
        type: job.type,
        query: job.query,
        records: job.records,
        ...(job.view === undefined ? {} : { view: job.view }),
        format: job.format,
        write: job.write,
      },
    },
  };
  return `# ${oneJobCommand(job).replaceAll('\n', ' ')}\n${stringify(spec, { lineWidth: 0 })}`;
}

/**
 * A file database's relative path (`scheme:x.db`, `scheme:data/x.db`, `x.db`), given from `from`,
 * as seen from `to`. Anything else (a server's URL, an absolute path) is as it is.
 */
function rebase(url: string, from: string, to: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):(?!\/\/)(.*)$/i.exec(url);
  const [prefix, path] = scheme ? [`${scheme[1]}:`, scheme[2]!] : ['', url];
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url) || path === '' || path === ':memory:') return url;
  if (isAbsolute(path)) return url;
  const moved = relative(to, resolve(from, path)) || '.';
  return `${prefix}${moved}`;
}

/** A URL's password (a server's) as `${PGPASSWORD}`: a saved file never holds it. */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    return url.replace(`:${parsed.password}@`, ':${PGPASSWORD}@');
  } catch {
    return url;
  }
}

/** The database password a `get`'s destination URL carries, for `${PGPASSWORD}`. */
export function destinationPassword(url: string): string | undefined {
  try {
    const password = new URL(url).password;
    return password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}
