/**
 * A worker thread that turns result-file bytes into record batches (parse, decode, shape), so
 * that parsing runs on one core while the main thread writes to the database on the other.
 * The protocol is in parallel.ts; this file only runs inside the worker.
 */
import { PassThrough } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { recordBatches } from './index.js';
import type { ParseRequest, ToMain, ToWorker } from './parallel.js';
import { JobTables } from './tables.js';

const port = parentPort;
if (!port) throw new Error('parse-worker.ts runs in a worker thread');

let input: PassThrough | undefined;
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
  }
});

function post(message: ToMain): void {
  port!.postMessage(message);
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
      post({ type: 'batch', batch });
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
