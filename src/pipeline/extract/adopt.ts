import { DATA_TYPES, type DataType, FIELDS } from '../../catalog.js';
import type { DownloadInfo } from '../../client/types.js';
import type { QueryNode } from '../../query/ast.js';
import { compileQuery } from '../../query/evaluate.js';
import { checkQuery } from '../../query/index.js';
import { sampleRecords } from '../../records/sample.js';
import type { RunContext } from '../context.js';
import type { JobSpec } from '../spec/spec.js';

/**
 * Whether a download found on the service is the one a job asked for, when the job did not hear
 * its id (a crash between asking and hearing, or an ambiguous failure of the request). v4
 * downloads do not say what they searched, and another pipeline of the same account may have
 * started one meanwhile: a download is adopted only when it can be shown to be this job's.
 *
 * It must have been created in the window of the request; where it says its data type, query,
 * format or size, they must be the job's; its file names must be of the job's format; and its
 * first records must be records of the job's data type (none carries a field only another data
 * type has; fields no data type lists are no evidence either way, the service adds fields) that
 * match the job's query (its terms are checked on the fields the records carry). A download with
 * no file yet is waited for.
 */
export interface Verdict {
  ours: boolean;
  reason: string;
}

/** Records read from a candidate's first file. */
const SAMPLE = 20;

/**
 * Slack around when the job asked, by the service's clock (this machine's time converted by the
 * service's Date header, in whole seconds; ServiceClient.serviceTime).
 */
const CLOCK_SKEW_MS = 5 * 60_000;

export async function verifyDownload(
  ctx: RunContext,
  job: JobSpec,
  request: { query: string; requestedAt: string; records?: number },
  candidate: DownloadInfo,
): Promise<Verdict> {
  const no = (reason: string): Verdict => ({ ours: false, reason });
  if (candidate.type !== undefined && candidate.type !== job.type) {
    return no(`it holds ${candidate.type}, the job asks for ${job.type}`);
  }
  if (candidate.query !== undefined && candidate.query !== request.query) {
    return no(`it searched '${candidate.query}', the job '${request.query}'`);
  }
  if (candidate.format !== undefined && candidate.format !== job.format) {
    return no(`its files are ${candidate.format}, the job asks for ${job.format}`);
  }
  if (candidate.createdAt !== undefined) {
    const created = Date.parse(candidate.createdAt);
    // requestedAt is this machine's time, createdAt the service's: each of the moments it may
    // be on the service's clock (as the clocks differ now, or as if they agreed; the run that
    // asked may have seen another difference) is a window the download may have been made in.
    const mine = Date.parse(request.requestedAt);
    const inWindow = (asked: number) =>
      created >= asked - CLOCK_SKEW_MS && created <= asked + CLOCK_SKEW_MS + 60 * 60_000;
    if (!inWindow(ctx.client.serviceTime(mine)) && !inWindow(mine)) {
      return no(
        `it was created at ${candidate.createdAt}, not when the job asked (${request.requestedAt})`,
      );
    }
  }
  let download = candidate;
  const deadline = ctx.clock.now() + job.poll.timeout;
  while (
    download.files.length === 0 &&
    (download.state === 'queued' || download.state === 'running')
  ) {
    if (ctx.clock.now() >= deadline) return no('it had no file to check within the poll timeout');
    await ctx.clock.sleep(job.poll.interval, ctx.signal);
    download = await ctx.client.getDownload(download.id, { signal: ctx.signal });
  }
  if (
    request.records !== undefined &&
    download.state === 'completed' &&
    download.numRecords > request.records
  ) {
    return no(`it holds ${download.numRecords} records, the job asked for ${request.records}`);
  }
  const first = download.files[0];
  if (first === undefined) return { ours: download.numRecords === 0, reason: 'it holds no record' };
  const csv = /\.csv(\.gz)?$/i.test(first.name);
  const text = /\.(txt|json|ndjson|jsonl)(\.gz)?$/i.test(first.name);
  if ((job.format === 'csv' && text) || (job.format === 'json' && csv)) {
    return no(`its file ${first.name} is not ${job.format}`);
  }
  const stream = await ctx.client.openResultFile(download.id, first, { signal: ctx.signal });
  const records = await sampleRecords(stream, job.format, job.type, SAMPLE);
  const { ast } = checkQuery(request.query, job.type);
  const predicate = compileQuery(ast, job.type);
  const named = fieldsOf(ast);
  for (const record of records) {
    const foreign = Object.keys(record).find((k) => isForeign(job.type, k));
    if (foreign !== undefined)
      return no(`its records have '${foreign}', a field of ${otherTypes(job.type, foreign)}`);
    // A view may leave out fields the query names; then only the data type is checked.
    if ([...named].every((f) => f in record) && !predicate(record)) {
      return no(`a record (id ${String(record.id)}) does not match the job's query`);
    }
  }
  return { ours: true, reason: `${records.length} records checked` };
}

/** A field another data type lists and this one does not. */
function isForeign(type: DataType, field: string): boolean {
  return !Object.hasOwn(FIELDS[type], field) && otherTypes(type, field) !== '';
}

function otherTypes(type: DataType, field: string): string {
  return DATA_TYPES.filter((t) => t !== type && Object.hasOwn(FIELDS[t], field)).join(', ');
}

/** The top-level fields a query's terms name (a bare value searches every text field). */
function fieldsOf(node: QueryNode, into = new Set<string>()): Set<string> {
  if (node.type === 'term') {
    if (node.field === null) into.add('*');
    else into.add(node.field.split('.')[0]!);
  } else if (node.type === 'and' || node.type === 'or') {
    for (const child of node.children) fieldsOf(child, into);
  } else if (node.type === 'not') fieldsOf(node.child, into);
  return into;
}
