import { parentPort } from 'node:worker_threads';
import { checkRange, type RangeToCheck } from './check-lines.js';
import type { CheckFromWorker } from './check-thread.js';

/** The check worker (check-thread.ts): checks the ranges it is sent, one at a time. */
const port = parentPort!;
port.on('message', (message: { id: number; range: RangeToCheck }) => {
  checkRange(message.range).then(
    (checked) => port.postMessage({ id: message.id, checked } satisfies CheckFromWorker),
    (error: unknown) =>
      port.postMessage({ id: message.id, error: String((error as Error)?.message ?? error) }),
  );
});
