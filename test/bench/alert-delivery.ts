/**
 * How long an alert takes to one target, and how long a dead one holds up the end of a run:
 * a receiver that answers, one that answers 503, a closed port, and one that takes the
 * connection and never answers (the bound: 3 tries within 9 s).
 * Usage: npx tsx test/bench/alert-delivery.ts
 */
import { createServer as createTcpServer, type Socket } from 'node:net';
import { deliver } from '../../src/pipeline/notify/deliver.js';
import { testMessage } from '../../src/pipeline/notify/message.js';
import { startHttpReceiver } from '../helpers/receivers.js';

const ok = await startHttpReceiver();
const busy = await startHttpReceiver(() => 503);
const sockets: Socket[] = [];
const hole = createTcpServer((socket) => sockets.push(socket));
await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
const holePort = (hole.address() as { port: number }).port;
const message = testMessage('bench', 'bench.yaml');

const cases: [string, string][] = [
  ['answers 200', `${ok.url}/hook`],
  ['answers 503', `${busy.url}/hook`],
  ['closed port', 'http://127.0.0.1:9/hook'],
  ['never answers', `http://127.0.0.1:${holePort}/hook`],
];
console.log('target          ok     tries  seconds');
for (const [name, url] of cases) {
  const started = performance.now();
  const d = await deliver({ kind: 'webhook', url }, message);
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  console.log(
    `${name.padEnd(15)} ${String(d.ok).padEnd(6)} ${String(d.attempts).padEnd(6)} ${seconds}`,
  );
}
for (const socket of sockets) socket.destroy();
hole.close();
await Promise.all([ok.close(), busy.close()]);
