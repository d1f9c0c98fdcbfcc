/**
 * A worker thread that turns result-file bytes into record batches (parse, decode, shape), so
 * that parsing runs on one core while the main thread writes to the database on the other.
 * The protocol is in parallel.ts; this file only runs inside the worker.
 */
import { PassThrough } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { encodeCopyText } from '../schema/copy-text.js';
import { csvBlock } from './csv.js';
import { packedBatches } from './index.js';
import { NdjsonPacker, ndjsonBlock, ndjsonPackedBlock } from './ndjson.js';
import type { ParseRequest, ToMain, ToWorker } from './parallel.js';
import { packBatch } from './shape.js';
import { JobTables } from './tables.js';

const port = parentPort;
if (!port) throw new Error('parse-worker.ts runs in a worker thread');

let input: PassThrough | undefined;
/** The file whose blocks this worker is given (a file parsed by several workers at once). */
let blocks:
  | { request: ParseRequest; job: number; tables: JobTables; packer?: NdjsonPacker }
  | undefined;
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
      const tables = new JobTables(message.request.plan);
      blocks = { request: message.request, job: message.job, tables };
      if (tables.plainJson && message.request.format === 'json') {
        blocks.packer = new NdjsonPacker(tables.plan.type, tables.hintsOf(tables.main));
      }
      break;
    }
    case 'block':
      parseBlock(message);
      break;
  }
});

function post(message: ToMain): void {
  port!.postMessage(message);
}

/**
 * Posts a batch, its rows as COPY text where the request asks for it: the text's bytes are
 * transferred, not copied.
 */
function postBatch(
  message: Extract<ToMain, { type: 'batch' } | { type: 'parsed' }>,
  request: ParseRequest,
): void {
  const { batch } = message;
  const rows = request.copyText && encodeCopyText(batch.rows, batch.columns, request.copyText.keep);
  if (!rows?.text) {
    port!.postMessage(message);
    return;
  }
  port!.postMessage({ ...message, batch: { ...batch, rows } }, [
    rows.text.bytes.buffer as ArrayBuffer,
  ]);
}

function parseBlock(message: Extract<ToWorker, { type: 'block' }>): void {
  const { seq, firstLine, data } = message;
  try {
    if (blocks === undefined) throw new Error('a block came before its file');
    const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
    const { request } = blocks;
    if (blocks.packer) {
      const batch = ndjsonPackedBlock(text, firstLine, blocks.packer);
      postBatch({ type: 'parsed', job: blocks.job, seq, batch }, request);
      return;
    }
    const { type } = request.plan;
    const { shape } = blocks.tables;
    const job = blocks.job;
    if (request.format === 'csv') {
      const { reader, usedLines } = csvBlock(text, firstLine, message, type, shape);
      const { rows, rejects, columns } = reader;
      postBatch(
        {
          type: 'parsed',
          job,
          seq,
          batch: packBatch({ rows, rejects, bytesRead: 0 }, blocks.tables),
          ...(usedLines === undefined ? {} : { usedLines }),
          // The header goes back only from the block that read it.
          ...(columns && message.columns === undefined ? { columns } : {}),
        },
        request,
      );
      return;
    }
    const { rows, rejects } = ndjsonBlock(text, firstLine, type, shape);
    const batch = packBatch({ rows, rejects, bytesRead: 0 }, blocks.tables);
    postBatch({ type: 'parsed', job, seq, batch }, request);
  } catch (error) {
    const { message: text, name } = error as Error;
    post({ type: 'error', message: text, name, ...(blocks ? { job: blocks.job } : {}) });
  }
}

async function run(request: ParseRequest): Promise<void> {
  input = new PassThrough({ highWaterMark: 1 << 20 });
  unacked = 0;
  try {
    const tables = new JobTables(request.plan);
    for await (const batch of packedBatches(input, request.format, tables, request.batchSize)) {
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
