import { createReadStream } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { Transform } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { EmulatorContext } from '../service.js';
import { HttpProblem } from '../state.js';

const NAME = /^([0-9a-f]{24})_(\d+)\.(csv|txt)$/;

/**
 * Pre-signed result files, served as a storage service serves them: a length, byte ranges (so a
 * client can resume a cut transfer), an ETag, optional gzip, and 403 once the URL has expired.
 */
export function registerFiles(app: FastifyInstance, ctx: EmulatorContext): void {
  app.get<{ Params: { name: string }; Querystring: Record<string, string> }>(
    '/files/:name',
    async (request, reply) => {
      const path = request.url.split('?')[0]!;
      const verdict = ctx.signer.verify(
        path,
        request.query,
        ctx.clock.now(),
        ctx.state.fileUrlGeneration,
      );
      if (verdict === 'expired') throw new HttpProblem(403, 'Request has expired');
      if (verdict === 'invalid')
        throw new HttpProblem(
          403,
          'The request signature we calculated does not match the signature you provided',
        );
      const match = NAME.exec(request.params.name);
      const d = match && ctx.state.downloads.find((x) => x.publicId === match[1]);
      const n =
        match && d && match[3] === (d.format === 'csv' ? 'csv' : 'txt') ? Number(match[2]) : -1;
      const per = ctx.options.fileRecords;
      const total = d ? ctx.state.deliverable(d, ctx.clock.now()) : 0;
      if (!d || n < 0 || n * per >= total)
        throw new HttpProblem(404, 'The specified key does not exist.');

      const gzip =
        ctx.options.gzipFiles && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
      const file = await ctx.spool.file(
        ctx.engine,
        d,
        n,
        { from: n * per, to: Math.min(total, (n + 1) * per) },
        {
          wholeNumbersAsFloat: ctx.forms.wholeNumbersAsFloat,
          gzip,
          corrupt: ctx.faults.corruptRate,
        },
      );
      const etag = `"${d.publicId}-${n}-${file.size}${gzip ? '-gz' : ''}"`;
      reply.header('etag', etag).header('accept-ranges', 'bytes');
      reply.type(
        d.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
      );
      if (gzip) reply.header('content-encoding', 'gzip');

      const range = byteRange(request.headers, file.size, etag);
      const { start, end } = range ?? { start: 0, end: file.size - 1 };
      if (range) reply.code(206).header('content-range', `bytes ${start}-${end}/${file.size}`);
      const length = end - start + 1;
      reply.header('content-length', String(length));
      if (file.size === 0) return reply.send('');
      let stream: NodeJS.ReadableStream = createReadStream(file.path, {
        start,
        end,
        highWaterMark: 256 * 1024,
      });
      const cut = (request as { cutFault?: number }).cutFault;
      if (cut !== undefined)
        stream = stream.pipe(cutAfter(cut >= 0 ? cut : Math.floor(length / 2)));
      return reply.send(stream);
    },
  );
}

/**
 * The bytes a `Range` header asks for (one range, `bytes=a-b`, `a-` or `-n`), when it applies
 * (no `If-Range`, or one naming this `etag`); undefined for the whole file. 416 for a range the
 * file cannot satisfy.
 */
function byteRange(
  headers: IncomingHttpHeaders,
  size: number,
  etag: string,
): { start: number; end: number } | undefined {
  const { range } = headers;
  const ifRange = headers['if-range'];
  if (!range || (ifRange !== undefined && ifRange !== etag)) return undefined;
  const unsatisfiable = () =>
    new HttpProblem(416, 'The requested range is not satisfiable', [], {
      'content-range': `bytes */${size}`,
    });
  const m = /^bytes=(\d*)-(\d*)$/.exec(range);
  if (!m || (m[1] === '' && m[2] === '')) throw unsatisfiable();
  let start: number;
  let end = size - 1;
  if (m[1] === '') start = Math.max(0, size - Number(m[2]));
  else {
    start = Number(m[1]);
    if (m[2] !== '') end = Math.min(end, Number(m[2]));
  }
  if (start > end || start >= size) throw unsatisfiable();
  return { start, end };
}

/** Passes `limit` bytes through, then fails, so the connection drops mid-body. */
function cutAfter(limit: number): Transform {
  let sent = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const room = limit - sent;
      if (room <= 0) return callback(new Error('fault injected: connection cut'));
      if (chunk.length <= room) {
        sent += chunk.length;
        return callback(null, chunk);
      }
      sent = limit;
      this.push(chunk.subarray(0, room));
      // Let the partial chunk reach the socket before the stream errors.
      setImmediate(() => callback(new Error('fault injected: connection cut')));
    },
  });
}
