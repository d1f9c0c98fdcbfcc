/**
 * Shared pieces of the conformance suite: plain HTTP calls over a real socket (undici), a v4
 * and a v3 caller, and assertions for the error shapes of service-interface.md section 7 and
 * their real-world variants from wire-notes.md.
 */
import { strict as assert } from 'node:assert';
import { STATUS_CODES } from 'node:http';
import { parse as parseCsv } from 'csv-parse/sync';
import { request } from 'undici';
import type { EmulatorOptions, WireMode } from '../../src/emulator/index.js';
import { WIRE_FORMS, type WireForms } from '../../src/emulator/wire.js';
import { EmulatorHarness } from '../helpers/emulator.js';

export const WIRES = ['live', 'contract', 'real'] as const;
export type Wire = WireMode;

/** What a wire mode sends and accepts (src/emulator/wire.ts): the tests expect each form. */
export function formsOf(wire: Wire): WireForms {
  return WIRE_FORMS[wire];
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field by the tests.
export type Json = any;

export interface Reply {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The parsed body, or undefined when it is not JSON. */
  json: Json;
}

export interface CallInit {
  headers?: Record<string, string>;
  /** Sent as JSON with `content-type: application/json`. */
  json?: unknown;
  /** Sent as is. */
  body?: string | Buffer;
}

/** One HTTP exchange; redirects are not followed, so 303s can be inspected. */
export async function call(method: string, url: string, init: CallInit = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | Buffer | undefined = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await request(url, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  let json: Json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: flat, text, json };
}

/** Bytes of a URL, with optional headers (Range). */
export async function fetchBytes(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const res = await request(url, { method: 'GET', headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { status: res.statusCode, headers: flat, body };
}

export const BASE_OPTIONS: Partial<EmulatorOptions> = { scale: 0.05, queueMs: 50, rate: 200_000 };

export function startEmulator(wire: Wire, options: Partial<EmulatorOptions> = {}) {
  return EmulatorHarness.start({ ...BASE_OPTIONS, wire, ...options });
}

/** A v4 caller that logs in and sends its bearer token. */
export class V4 {
  token = '';

  constructor(readonly emu: EmulatorHarness) {}

  get wire(): Wire {
    return this.emu.emulator.options.wire;
  }

  async login(
    email = this.emu.credentials.email,
    password = this.emu.credentials.password,
  ): Promise<string> {
    const res = await call('POST', `${this.emu.v4Url}/auth`, { json: { email, password } });
    assert.equal(res.status, 200, `login failed: ${res.text}`);
    this.token = res.json.token;
    return this.token;
  }

  /** `path` is below the v4 root, e.g. `/account`. */
  call(method: string, path: string, json?: unknown, headers: Record<string, string> = {}) {
    return call(method, this.emu.v4Url + path, {
      headers: { authorization: `Bearer ${this.token}`, ...headers },
      json,
    });
  }

  get(path: string) {
    return this.call('GET', path);
  }

  async ok(method: string, path: string, json?: unknown): Promise<Json> {
    const res = await this.call(method, path, json);
    assert.ok(
      res.status >= 200 && res.status < 300,
      `${method} ${path} -> ${res.status} ${res.text}`,
    );
    return res.json;
  }

  account(): Promise<Json> {
    return this.ok('GET', '/account');
  }

  search(type: string, body: Record<string, unknown>) {
    return this.call('POST', `/${type}/search`, body);
  }

  /** A preview (or count) that must succeed. */
  async preview(type: string, body: Record<string, unknown>): Promise<Json> {
    const res = await this.search(type, body);
    assert.equal(res.status, 200, res.text);
    return res.json;
  }

  /** Starts a download; returns the id to use in paths and the start response. */
  async startDownload(
    type: string,
    body: Record<string, unknown>,
  ): Promise<{ id: string; start: Reply }> {
    const start = await this.search(type, { ...body, download: true });
    const forms = formsOf(this.wire);
    assert.equal(start.status, forms.v4Start.status, start.text);
    if (!forms.v4Start.searchAnswer) {
      assert.equal(typeof start.json.id, forms.integerIds ? 'number' : 'string');
      return { id: String(start.json.id), start };
    }
    assert.equal(typeof start.json.download_id, 'string');
    if (forms.v4Start.downloadObject) assert.equal(start.json.id, start.json.download_id);
    return { id: start.json.download_id, start };
  }

  async download(id: string): Promise<Json> {
    const res = await this.get(`/downloads/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200, res.text);
    return res.json;
  }
}

/** A v3 caller: basic auth with the API token as user name and an empty password. */
export class V3 {
  constructor(
    readonly emu: EmulatorHarness,
    public token = emu.credentials.token,
  ) {}

  get authorization(): string {
    return `Basic ${Buffer.from(`${this.token}:`).toString('base64')}`;
  }

  get(pathAndQuery: string, headers: Record<string, string> = {}) {
    return call('GET', this.emu.v3Url + pathAndQuery, {
      headers: { authorization: this.authorization, ...headers },
    });
  }
}

/**
 * The records a v4 download object says it holds so far: `num_downloaded` where the wire form
 * sends it (its `num_records` is then the records the download will hold), else `num_records`.
 */
export function recordsSoFar(wire: Wire, download: Json): number {
  const value = formsOf(wire).numDownloaded ? download.num_downloaded : download.num_records;
  assert.ok(Number.isInteger(value), JSON.stringify(download));
  return value;
}

/** The wire status of a download in the contract's terms (`started`/`running` mean working). */
export function contractStatus(status: string): string {
  return (
    ({ started: 'queued', running: 'in_progress' } as Record<string, string>)[status] ?? status
  );
}

/** Result URLs of a download in either form (`[{url}]` or `["url"]`), checking the form. */
export function resultUrls(wire: Wire, download: Json): string[] {
  assert.ok(Array.isArray(download.results), 'results is an array');
  return download.results.map((entry: Json) => {
    if (formsOf(wire).urlStrings) {
      assert.equal(typeof entry, 'string', `${wire} wire: results are URL strings`);
      return entry as string;
    }
    assert.deepEqual(Object.keys(entry), ['url'], 'contract: results are objects with url');
    assert.equal(typeof entry.url, 'string');
    return entry.url as string;
  });
}

/**
 * Asserts a v4 error answer: `{error, message, code, details[]}` (contract, live) or
 * `{errors: [...]}` (real). Returns all the text it carries, for matching.
 */
export function assertV4Error(wire: Wire, res: Reply, status: number, pattern?: RegExp): string {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  assert.match(res.headers['content-type'] ?? '', /application\/json/);
  let text: string;
  if (!formsOf(wire).errorsList) {
    assert.deepEqual(
      Object.keys(res.json).sort(),
      ['code', 'details', 'error', 'message'],
      res.text,
    );
    assert.equal(res.json.error, STATUS_CODES[status]);
    assert.equal(res.json.code, status);
    assert.equal(typeof res.json.message, 'string');
    assert.ok(res.json.message.length > 0);
    assert.ok(Array.isArray(res.json.details));
    for (const d of res.json.details) {
      assert.deepEqual(Object.keys(d).sort(), ['field', 'message']);
      assert.equal(typeof d.field, 'string');
      assert.equal(typeof d.message, 'string');
    }
    text = [
      res.json.message,
      ...res.json.details.map((d: Json) => `${d.field}: ${d.message}`),
    ].join('\n');
  } else {
    assert.deepEqual(Object.keys(res.json), ['errors'], res.text);
    assert.ok(Array.isArray(res.json.errors) && res.json.errors.length > 0);
    for (const e of res.json.errors) assert.equal(typeof e, 'string');
    text = res.json.errors.join('\n');
  }
  if (pattern) assert.match(text, pattern);
  return text;
}

/** The `field` entries of a contract error's details (empty for the real form). */
export function detailFields(res: Reply): string[] {
  return Array.isArray(res.json?.details) ? res.json.details.map((d: Json) => d.field) : [];
}

/** A v3 error answer other than 400: `{error, message, code}` (500 adds requestId). */
export function assertV3Error(res: Reply, status: number, pattern?: RegExp): void {
  assert.equal(res.status, status, res.text);
  const keys =
    status >= 500 ? ['code', 'error', 'message', 'requestId'] : ['code', 'error', 'message'];
  assert.deepEqual(Object.keys(res.json).sort(), keys, res.text);
  assert.equal(res.json.error, STATUS_CODES[status]);
  assert.equal(res.json.code, status);
  assert.equal(typeof res.json.message, 'string');
  if (status >= 500) assert.equal(typeof res.json.requestId, 'string');
  if (pattern) assert.match(res.json.message, pattern);
}

/** A v3 400 answer: only `error`. */
export function assertV3BadRequest(res: Reply, pattern?: RegExp): void {
  assert.equal(res.status, 400, res.text);
  assert.deepEqual(Object.keys(res.json), ['error'], res.text);
  assert.equal(typeof res.json.error, 'string');
  if (pattern) assert.match(res.json.error, pattern);
}

/** How the service writes one value into a CSV cell (wire-notes.md, "Result files"). */
export function expectedCell(value: unknown, wire: Wire): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') {
    return formsOf(wire).wholeNumbersAsFloat && Number.isInteger(value)
      ? `${value}.0`
      : String(value);
  }
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null)) {
    return value.join(',');
  }
  return JSON.stringify(value);
}

export function parseCsvText(text: string): string[][] {
  return parseCsv(text, { relax_column_count: false }) as string[][];
}

export function parseNdjson(text: string): Json[] {
  assert.ok(text === '' || text.endsWith('\n'), 'NDJSON ends with a newline');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
}

/** Moves emulator time forward (downloads progress, tokens and URLs age). */
export async function advance(emu: EmulatorHarness, ms: number): Promise<void> {
  await emu.advanceClock(ms);
}

/** Emulator time in ms, read from the control API. */
export async function emulatorNow(emu: EmulatorHarness): Promise<number> {
  const info = await emu.control<{ now: string }>('GET', 'info');
  return Date.parse(info.now);
}

/** Emulator time needed for a download of `records` records to finish from its start. */
export function runTime(emu: EmulatorHarness, records: number): number {
  const { queueMs, rate } = emu.emulator.options;
  return queueMs + Math.ceil((records * 1000) / rate) + 50;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A property record's people entry with title owner, if any. */
export function ownerOf(record: Json): Json | undefined {
  return Array.isArray(record.people)
    ? record.people.find((p: Json) => String(p.title).toLowerCase() === 'owner')
    : undefined;
}
