import { type DataType, premadeView } from '../catalog.js';
import { QueryError } from '../errors.js';
import type { EmulatorClock } from './emulator-clock.js';
import type { FaultInjector } from './faults.js';
import type { EmulatorOptions } from './options.js';
import type { FileSpool } from './render.js';
import { csvCell, fileName } from './render.js';
import type { UrlSigner } from './signing.js';
import { type Download, type EmulatorState, HttpProblem, type TargetedUpdate } from './state.js';
import { projection, unknownViewFields, type View, viewHasPeopleKeys } from './views.js';
import { isoDate, type WireForms } from './wire.js';
import type { AddressMatching, MatchSet, SearchEngine } from './world/search.js';

export interface EmulatorContext {
  options: EmulatorOptions;
  /** The forms of `options.wire` (wire.ts). */
  forms: WireForms;
  clock: EmulatorClock;
  state: EmulatorState;
  engine: SearchEngine;
  spool: FileSpool;
  faults: FaultInjector;
  signer: UrlSigner;
}

export const PREVIEW_MAX = 10;

export interface SearchRequest {
  api: 'v3' | 'v4';
  type: DataType;
  query: string;
  /** Undefined means all matching records (v3 downloads without `records`). */
  numRecords: number | undefined;
  recordsParam: string;
  format: 'csv' | 'json';
  download: boolean;
  view: string | undefined;
  autoTrace: boolean;
  addressMatching: AddressMatching;
  onlyTraceable: boolean;
}

export interface SearchResult {
  numFound: number;
  /** Records delivered (previews) or to be delivered (downloads). */
  delivered: number;
  records: Record<string, unknown>[];
  download?: Download;
  autoTrace: boolean;
}

/** The view's fields, from the caller's views or the pre-made ones; 400 when it does not exist. */
export function viewFields(ctx: EmulatorContext, name: string | undefined): string[] | undefined {
  if (name === undefined || name === '') return undefined;
  const own = ctx.state.views.get(name);
  if (own) return own.fields;
  const premade = premadeView(name);
  if (premade) return [...premade.fields];
  throw new HttpProblem(400, `view does not exist: ${name}`, [
    { field: 'view', message: `view '${name}' does not exist` },
  ]);
}

/** A v4 search that only counts the matches: what the real-time operations ask first. */
export function countOnly(type: DataType, query: string): SearchRequest {
  return {
    api: 'v4',
    type,
    query,
    numRecords: 0,
    recordsParam: '',
    format: 'json',
    download: false,
    view: undefined,
    autoTrace: false,
    addressMatching: 'on',
    onlyTraceable: false,
  };
}

export function search(ctx: EmulatorContext, req: SearchRequest): SearchResult {
  // One moment for the whole request: a download is a snapshot of the world as of its start.
  const now = ctx.clock.now();
  const fields = viewFields(ctx, req.view);
  if (req.autoTrace) checkAutoTrace(ctx, req, fields);
  const matches = match(ctx, req, now);
  return req.download
    ? startDownload(ctx, req, fields, matches, now)
    : preview(ctx, req, fields, matches, now);
}

/** 403 without both plans autotrace needs; 400 for a view without the people keys it fills. */
function checkAutoTrace(ctx: EmulatorContext, req: SearchRequest, fields: string[] | undefined) {
  if (!(ctx.state.hasPlan('property') && ctx.state.hasPlan('people'))) {
    throw new HttpProblem(
      403,
      'auto_trace requires both a people data plan and a property data plan',
      [
        {
          field: 'auto_trace',
          message: 'requires both a people data plan and a property data plan',
        },
      ],
    );
  }
  if (fields && !viewHasPeopleKeys(fields)) {
    throw new HttpProblem(
      400,
      `view '${req.view}' cannot be used with auto_trace: include people.people_keys:* in the view or leave it blank`,
      [
        {
          field: 'view',
          message:
            'cannot be used with auto_trace: include people.people_keys:* in the view or leave it blank',
        },
      ],
    );
  }
}

/** The records the query finds at `now`; 400 for a query that does not parse or check. */
function match(ctx: EmulatorContext, req: SearchRequest, now: number): MatchSet {
  try {
    return ctx.engine.match(
      req.type,
      req.query,
      {
        autoTrace: req.autoTrace,
        addressMatching: req.addressMatching,
        onlyTraceable: req.onlyTraceable,
      },
      now,
    );
  } catch (error) {
    if (error instanceof QueryError) {
      const message =
        error.code === 'SLUICE_QUERY_FIELD' ? error.message : `invalid query: ${error.message}`;
      throw new HttpProblem(400, message, [{ field: 'query', message: error.message }]);
    }
    throw error;
  }
}

/** A search that is no download: at most PREVIEW_MAX records, charged as they are delivered. */
function preview(
  ctx: EmulatorContext,
  req: SearchRequest,
  fields: string[] | undefined,
  matches: MatchSet,
  now: number,
): SearchResult {
  const { state, engine } = ctx;
  const numFound = matches.count;
  const wanted = req.numRecords ?? PREVIEW_MAX;
  if (wanted > PREVIEW_MAX) {
    throw new HttpProblem(
      400,
      `num_records must be at most ${PREVIEW_MAX} for a search that is not a download`,
      [
        {
          field: 'num_records',
          message: `must be at most ${PREVIEW_MAX} for a search that is not a download`,
        },
      ],
    );
  }
  const delivered = Math.min(wanted, numFound);
  if (delivered === 0) return { numFound, delivered, records: [], autoTrace: req.autoTrace };
  state.requireCredits(req.type, req.autoTrace, delivered);
  const { columns, project } = projection(req.type, fields, engine.world.extras);
  const asFloat = ctx.forms.wholeNumbersAsFloat;
  const records: Record<string, unknown>[] = [];
  for (let p = 0; p < delivered; p++) {
    const record = project(engine.record(req.type, matches.at(p), req.autoTrace, now));
    // A csv preview shows the records as the CSV file would hold them: one text cell a field.
    records.push(req.format === 'csv' ? csvShaped(columns, record, asFloat) : record);
  }
  state.charge(req.type, req.autoTrace, delivered);
  return { numFound, delivered, records, autoTrace: req.autoTrace };
}

/** A download started: the records found now, to be delivered (and charged) as they are. */
function startDownload(
  ctx: EmulatorContext,
  req: SearchRequest,
  fields: string[] | undefined,
  matches: MatchSet,
  now: number,
): SearchResult {
  const { state, engine } = ctx;
  const numFound = matches.count;
  if (req.numRecords !== undefined && req.numRecords < 1) {
    throw new HttpProblem(400, 'num_records must be at least 1 for a download', [
      { field: 'num_records', message: 'must be at least 1 for a download' },
    ]);
  }
  const target = Math.min(req.numRecords ?? numFound, numFound);
  state.requireCredits(req.type, req.autoTrace, target);
  const seq = state.nextSeq();
  const download: Download = {
    seq,
    publicId: publicIdOf(seq, ctx.options.seed ^ state.idSalt),
    api: req.api,
    type: req.type,
    query: req.query,
    view: req.view ?? '',
    viewFields: fields,
    format: req.format,
    autoTrace: req.autoTrace,
    addressMatching: req.addressMatching,
    onlyTraceable: req.onlyTraceable,
    recordsParam: req.recordsParam,
    target,
    numFound,
    matches,
    extras: engine.world.extras,
    createdAt: now,
    charged: 0,
  };
  state.downloads.push(download);
  return { numFound, delivered: target, records: [], download, autoTrace: req.autoTrace };
}

function csvShaped(columns: string[], record: Record<string, unknown>, asFloat: boolean) {
  const out: Record<string, string> = {};
  for (const column of columns) {
    const cell = csvCell(record[column], asFloat);
    if (cell !== '')
      out[column] = cell.startsWith('"') ? cell.slice(1, -1).replaceAll('""', '"') : cell;
  }
  return out;
}

/** 24 hex digits, stable for a seed and sequence number, like the service's string ids. */
function publicIdOf(seq: number, seed: number): string {
  let h = (seed * 2654435761) ^ (seq * 40503);
  let out = '';
  for (let i = 0; i < 3; i++) {
    h = Math.imul(h ^ (h >>> 16), 0x45d9f3b) ^ (seq + i);
    out += (h >>> 0).toString(16).padStart(8, '0');
  }
  return out;
}

export interface ResultFile {
  n: number;
  name: string;
  url: string;
  from: number;
  to: number;
}

/** Fresh signed URLs for the files a download can deliver now. */
export function resultFiles(
  ctx: EmulatorContext,
  d: Download,
  origin: string,
  expiresAt?: number,
): ResultFile[] {
  const now = ctx.clock.now();
  const total = ctx.state.deliverable(d, now);
  const per = ctx.options.fileRecords;
  const files: ResultFile[] = [];
  for (let n = 0; n * per < total; n++) {
    const name = fileName(d, n);
    const path = `/files/${name}`;
    const url =
      origin +
      ctx.signer.sign(path, ctx.state.fileUrlGeneration, expiresAt ?? now + ctx.options.fileTtlMs);
    files.push({ n, name, url, from: n * per, to: Math.min(total, (n + 1) * per) });
  }
  return files;
}

export function createView(ctx: EmulatorContext, name: string, fields: string[]): View {
  checkViewName(name);
  checkViewFields(ctx, fields);
  if (ctx.state.views.has(name) || premadeView(name)) {
    throw new HttpProblem(409, `a view named '${name}' already exists`, [
      { field: 'name', message: 'already exists' },
    ]);
  }
  const view: View = { name, fields: [...fields], created_at: isoDate(ctx.clock.now()) };
  ctx.state.views.set(name, view);
  return view;
}

export function updateView(
  ctx: EmulatorContext,
  current: string,
  next: { name?: string; fields?: string[] },
): View {
  const view = ownView(ctx, current);
  const name = next.name ?? view.name;
  checkViewName(name);
  if (next.fields) checkViewFields(ctx, next.fields);
  if (name !== current && (ctx.state.views.has(name) || premadeView(name))) {
    throw new HttpProblem(409, `a view named '${name}' already exists`, [
      { field: 'name', message: 'already exists' },
    ]);
  }
  const updated: View = {
    name,
    fields: next.fields ? [...next.fields] : view.fields,
    created_at: view.created_at,
  };
  ctx.state.views.delete(current);
  ctx.state.views.set(name, updated);
  return updated;
}

export function ownView(ctx: EmulatorContext, name: string): View {
  const view = ctx.state.views.get(name);
  if (view) return view;
  if (premadeView(name)) {
    throw new HttpProblem(403, `'${name}' is a pre-made view and cannot be changed`);
  }
  throw new HttpProblem(404, `view '${name}' not found`);
}

function checkViewName(name: string): void {
  if (name.trim() === '' || name.length > 200 || /[/\u0000-\u001f]/.test(name)) {
    throw new HttpProblem(
      400,
      'invalid view name: 1 to 200 characters, no slash or control characters',
      [{ field: 'name', message: 'invalid view name' }],
    );
  }
}

/** A view names fields the emulator serves (the catalogue's and the extra ones) of any type. */
function checkViewFields(ctx: EmulatorContext, fields: string[]): void {
  if (fields.length === 0) {
    throw new HttpProblem(400, 'a view needs at least one field', [
      { field: 'fields', message: 'needs at least one field' },
    ]);
  }
  const unknown = unknownViewFields(fields, ctx.engine.world.extras);
  if (unknown.length > 0) {
    throw new HttpProblem(
      400,
      `unknown field${unknown.length > 1 ? 's' : ''} in view: ${unknown.join(', ')}`,
      unknown.map((field) => ({ field: 'fields', message: `unknown field '${field}'` })),
    );
  }
}

/** Targeted updates refresh records in real time: progress like a download, charged upfront. */
export function createTargetedUpdate(
  ctx: EmulatorContext,
  input: { query: string; num_records: number; data_type?: DataType },
): TargetedUpdate {
  const type = input.data_type ?? 'properties';
  const result = search(ctx, countOnly(type, input.query));
  const count = Math.min(input.num_records, result.numFound);
  ctx.state.requireCredits(type, false, count);
  ctx.state.charge(type, false, count);
  refreshRecords(ctx, type, input.query, count);
  const update: TargetedUpdate = {
    id: `tu_${ctx.state.nextSeq()}`,
    query: input.query,
    data_type: type,
    num_records: count,
    createdAt: ctx.clock.now(),
    total_cost: count,
  };
  ctx.state.updates.push(update);
  return update;
}

/**
 * What a targeted update does to the records it matches: each is fetched again from its sources
 * and updated (dated by its refresh, as a churn change is) at the moment the update's progress
 * reaches it, queued like a download first, then `rate` records a second; so a download after
 * the update is complete holds them refreshed, and one during it the part refreshed so far.
 */
function refreshRecords(ctx: EmulatorContext, type: DataType, query: string, count: number) {
  const now = ctx.clock.now();
  const found = ctx.engine.match(
    type,
    query,
    { autoTrace: false, addressMatching: 'on', onlyTraceable: false },
    now,
  );
  const start = now + ctx.options.queueMs;
  for (let p = 0; p < Math.min(count, found.count); p++) {
    const at = start + Math.ceil(((p + 1) * 1000) / ctx.options.rate);
    ctx.engine.world.update(type, [found.at(p)], at);
  }
}

export function targetedUpdateBody(ctx: EmulatorContext, u: TargetedUpdate) {
  const elapsed = ctx.clock.now() - u.createdAt - ctx.options.queueMs;
  const updated =
    elapsed < 0 ? 0 : Math.min(u.num_records, Math.floor((elapsed * ctx.options.rate) / 1000));
  const status = elapsed < 0 ? 'queued' : updated >= u.num_records ? 'completed' : 'in_progress';
  return {
    id: u.id,
    query: u.query,
    data_type: u.data_type,
    num_records: u.num_records,
    num_updated: updated,
    status,
    total_cost: u.total_cost,
    created_at: isoDate(u.createdAt),
  };
}

/** Only fields the data type has can appear in a record: the scrape answer reuses search. */
export const SCRAPE_MAX = 100;
