/**
 * A worker thread that turns result-file bytes into record batches (parse, decode, shape), so
 * that parsing runs on one core while the main thread writes to the database on the other.
 * The protocol is in parallel.ts; this file only runs inside the worker.
 */
import { PassThrough } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { encodeCopyText } from '../../schema/copy-text.js';
import { CsvReader, csvBlock } from '../csv.js';
import { packedBatches } from '../index.js';
import { NdjsonPacker, ndjsonBlock, ndjsonPackedBlock } from '../ndjson.js';
import { MAX_RECORD_BYTES, tooLongReject } from '../record-size.js';
import { packBatch } from '../shape.js';
import { JobTables } from '../tables.js';
import type { PackedBatch } from '../types.js';
import type { ParseRequest, ToMain, ToWorker } from './parse-protocol.js';
import { type PostedBatch, toWire } from './posted-batch.js';

const port = parentPort;
if (!port) throw new Error('parse-worker.ts runs in a worker thread');

let input: PassThrough | undefined;
/**
 * The files whose blocks this worker is given (files parsed by several workers at once), by
 * their job number: several files may be loaded at once, each over its own connection.
 */
const files = new Map<
  number,
  { request: ParseRequest; tables: JobTables; packer: NdjsonPacker | undefined }
>();
/** The latest file's job number: a block of a lower one not in `files` was dropped. */
let latestJob = 0;
/** Batches posted and not yet taken by the main thread; parsing pauses at the limit. */
let unacked = 0;
let resume: (() => void) | undefined;

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'start':
      void run(message.request);
      break;
    case 'chunk':
      input?.write(
        Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength),
        () => post({ type: 'consumed' }),
      );
      break;
    case 'end':
      input?.end();
      break;
    case 'ack':
      unacked--;
      resume?.();
      break;
    case 'blocks': {
      const { request, job } = message;
      const tables = new JobTables(request.plan);
      const packer =
        tables.plainJson && request.format === 'json'
          ? new NdjsonPacker(
              tables.plan.type,
              tables.hintsOf(tables.main),
              request.maxRecordBytes ?? MAX_RECORD_BYTES,
            )
          : undefined;
      files.set(job, { request, tables, packer });
      latestJob = Math.max(latestJob, job);
      break;
    }
    case 'drop':
      files.delete(message.job);
      break;
    case 'block':
      parseBlock(message);
      break;
  }
});

function post(message: ToMain): void {
  port!.postMessage(message);
}

/** A message that carries a batch, before the batch is made ready to post. */
type Unposted<M> = M extends { batch: PostedBatch }
  ? Omit<M, 'batch'> & { batch: PackedBatch }
  : never;

/**
 * Posts a batch (see posted-batch.ts), its rows as COPY text where the request asks for it: the buffers
 * of its values and of its COPY text are moved to the main thread, not copied.
 */
function postBatch(message: Unposted<ToMain>, request: ParseRequest): void {
  const { batch } = message;
  const { encoding } = request;
  const rows =
    encoding?.name === 'copy-text'
      ? encodeCopyText(batch.rows, batch.columns, encoding.keep)
      : undefined;
  const wire = toWire(rows?.text ? { ...batch, rows } : batch);
  port!.postMessage({ ...message, batch: wire.batch } satisfies ToMain, wire.transfer);
}

function parseBlock(message: Extract<ToWorker, { type: 'block' }>): void {
  const { job, seq, firstLine, data } = message;
  const file = files.get(job);
  // A block of a file given up (its load failed or was stopped) is not wanted: its file's job
  // is dropped, and the blocks already on their way are skipped unread.
  if (file === undefined && job <= latestJob) return;
  try {
    if (file === undefined) throw new Error('a block came before its file');
    const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
    const { request, tables, packer } = file;
    const maxBytes = request.maxRecordBytes ?? MAX_RECORD_BYTES;
    if (message.tooLong !== undefined) {
      const batch = longLineBatch(message, text, request, tables, maxBytes);
      postBatch({ type: 'parsed', job, seq, batch }, request);
      return;
    }
    if (packer) {
      const batch = ndjsonPackedBlock(text, firstLine, packer);
      postBatch({ type: 'parsed', job, seq, batch }, request);
      return;
    }
    const { type } = request.plan;
    const { shape } = tables;
    if (request.format === 'csv') {
      const { reader, usedLines } = csvBlock(text, firstLine, message, type, shape, maxBytes);
      const { rows, columns } = reader;
      postBatch(
        {
          type: 'parsed',
          job,
          seq,
          batch: packBatch({ rows, ...reader.takeNotes(), bytesRead: 0 }, tables),
          ...(usedLines === undefined ? {} : { usedLines }),
          // The header goes back only from the block that read it.
          ...(columns && message.columns === undefined ? { columns } : {}),
        },
        request,
      );
      return;
    }
    const { rows, rejects } = ndjsonBlock(text, firstLine, type, shape, maxBytes);
    const batch = packBatch({ rows, rejects, bytesRead: 0 }, tables);
    postBatch({ type: 'parsed', job, seq, batch }, request);
  } catch (error) {
    const { message: text, name } = error as Error;
    post({ type: 'error', message: text, name, job });
  }
}

/**
 * The batch of a line beyond the limit, skipped unread (`tooLong` bytes, `head` its first ones):
 * its reject alone.
 */
function longLineBatch(
  message: Extract<ToWorker, { type: 'block' }>,
  head: string,
  request: ParseRequest,
  tables: JobTables,
  maxBytes: number,
): PackedBatch {
  const { firstLine, tooLong: bytes = 0 } = message;
  if (request.format === 'csv') {
    // Sent before the file's header was read only when it is the header: that fails the file.
    const reader = new CsvReader(request.plan.type, tables.shape, message.columns, maxBytes);
    reader.rejectLong(firstLine, head, bytes);
    return packBatch({ rows: [], ...reader.takeNotes(), bytesRead: 0 }, tables);
  }
  const rejects = [tooLongReject(firstLine, head, bytes, maxBytes)];
  return packBatch({ rows: [], rejects, bytesRead: 0 }, tables);
}

async function run(request: ParseRequest): Promise<void> {
  input = new PassThrough({ highWaterMark: 1 << 20 });
  unacked = 0;
  try {
    const tables = new JobTables(request.plan);
    const { format, batchSize, maxRecordBytes } = request;
    for await (const batch of packedBatches(input, format, tables, batchSize, maxRecordBytes)) {
      unacked++;
      postBatch({ type: 'batch', batch }, request);
      while (unacked >= request.maxBuffered) await new Promise<void>((r) => (resume = r));
      resume = undefined;
    }
    post({ type: 'done' });
  } catch (error) {
    post({ type: 'error', message: (error as Error).message, name: (error as Error).name });
  } finally {
    input = undefined;
  }
}
