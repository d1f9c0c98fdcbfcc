/**
 * A worker thread that turns result-file bytes into record batches (parse, decode, shape), so
 * that parsing runs on one core while the main thread writes to the database on the other.
 * The protocol is in parallel.ts; this file only runs inside the worker.
 */
import { PassThrough } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { batchColumns } from '../schema/plan.js';
import { recordBatches } from './index.js';
import { ndjsonBlock } from './ndjson.js';
import type { ParseRequest, ToMain, ToWorker } from './parallel.js';
import { JobTables } from './tables.js';
import type { RecordBatch } from './types.js';

const port = parentPort;
if (!port) throw new Error('parse-worker.ts runs in a worker thread');

let input: PassThrough | undefined;
/** The file whose blocks this worker is given (a file parsed by several workers at once). */
let blocks: { request: ParseRequest; tables: JobTables } | undefined;
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
    case 'blocks':
      blocks = { request: message.request, tables: new JobTables(message.request.plan) };
      break;
    case 'block':
      parseBlock(message.seq, message.firstLine, message.data);
      break;
  }
});

function post(message: ToMain): void {
  port!.postMessage(message);
}

/** The batch with the column types of its rows of the job's table. */
function typed(batch: RecordBatch, tables: JobTables): RecordBatch {
  const rows = batch.rows.map((parsed) => parsed.row);
  batch.columns = batchColumns(rows, tables.hintsOf(tables.main));
  return batch;
}

function parseBlock(seq: number, firstLine: number, data: Uint8Array): void {
  try {
    if (blocks === undefined) throw new Error('a block came before its file');
    const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
    const { rows, rejects } = ndjsonBlock(
      text,
      firstLine,
      blocks.request.plan.type,
      blocks.tables.shape,
    );
    post({ type: 'parsed', seq, batch: typed({ rows, rejects, bytesRead: 0 }, blocks.tables) });
  } catch (error) {
    post({ type: 'error', message: (error as Error).message, name: (error as Error).name });
  }
}

async function run(request: ParseRequest): Promise<void> {
  input = new PassThrough({ highWaterMark: 1 << 20 });
  unacked = 0;
  try {
    const tables = new JobTables(request.plan);
    for await (const batch of recordBatches(input, request.format, request.plan.type, {
      batchSize: request.batchSize,
      shape: tables.shape,
    })) {
      unacked++;
      post({ type: 'batch', batch: typed(batch, tables) });
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
