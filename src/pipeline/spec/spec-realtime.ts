import type { RawJob, RawPipeline } from './spec-format.js';

type Fail = (message: string, path: string[]) => never;

/**
 * The real-time operations a job may buy besides its download, checked: `scrape: true` (the
 * job's records come in the answer of POST /scrape) and `refresh:` (a targeted update of the
 * records before the job downloads them; its query is checked as the job's is, in spec-job.ts). Both are v4 operations, and each asks the service
 * for a number of records it charges one credit each, before anything is loaded.
 */
export function checkRealTime(raw: RawPipeline, name: string, j: RawJob, fail: Fail): void {
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  if (raw.source.api === 'v3') {
    if (j.scrape) fail('scrape needs the v4 API (v3 has no scrape operation)', at('scrape'));
    if (j.refresh) fail('refresh needs the v4 API (v3 has no targeted updates)', at('refresh'));
  }
  if (j.scrape) checkScrape(name, j, fail);
  if (j.refresh === undefined) return;
  if (j.people_keys_from !== undefined) {
    fail(
      'an owner lookup builds its own queries: refresh the properties job instead',
      at('refresh'),
    );
  }
}

/**
 * A scrape answers with the records themselves, as JSON, each with every field it has: it
 * takes no view, no file format, no search option, and a number of records (the service
 * scrapes that many, in real time).
 */
function checkScrape(name: string, j: RawJob, fail: Fail): void {
  const at = (...rest: string[]) => ['jobs', name, ...rest];
  if (j.records === 'all') {
    fail(
      'a scrape needs a number of records (records: N): the service scrapes that many in real time, one credit each',
      at('records'),
    );
  }
  if (j.format === 'csv')
    fail('a scrape answers with JSON records: remove format: csv', at('format'));
  if (j.view !== undefined) {
    fail('a scrape takes no view: its records carry every field they have', at('view'));
  }
  for (const key of [
    'auto_trace',
    'address_matching',
    'only_traceable',
    'require_people_data',
  ] as const) {
    if (j[key] !== undefined && j[key] !== false) fail(`a scrape takes no ${key}`, at(key));
  }
  if (j.people_keys_from !== undefined) {
    fail('an owner lookup downloads the owners: it cannot scrape', at('scrape'));
  }
  if (j.incremental !== undefined) {
    fail(
      'a scrape fetches the records it is asked for, now: it has no cursor (remove incremental)',
      at('incremental'),
    );
  }
  if (j.refresh !== undefined) {
    fail('a scrape fetches the records fresh already: remove refresh', at('refresh'));
  }
}
