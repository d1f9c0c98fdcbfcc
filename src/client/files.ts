import type { IncomingHttpHeaders } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ApiError, SluiceError } from '../errors.js';
import { type EventSink, reasonOf } from './events.js';
import type { HttpTransport, StreamResponse } from './http.js';
import type { CallOptions, DownloadInfo, ResultFileRef } from './types.js';

/**
 * A result file that came damaged or short is fetched again by whoever reads it whole (the
 * loader, `downloads fetch`), this many times in all, the first included.
 */
export const FILE_TRIES = 3;

/**
 * Whether a file's transfer went wrong in a way fetching it again may mend: gzip that does not
 * decode, or fewer records than the service said (found by the reader: a body that ends cleanly
 * carries no sign of it). A cut mid-body is resumed here, not fetched again.
 */
export function isTransferFault(error: unknown): boolean {
  const code = error instanceof SluiceError ? error.code : undefined;
  return code === 'SLUICE_FILE_DAMAGED' || code === 'SLUICE_FILE_INCOMPLETE';
}

export interface OpenFileOptions {
  http: HttpTransport;
  file: ResultFileRef;
  /** A fresh reference to the same file (same index), for when its URL has expired. */
  refresh: () => Promise<ResultFileRef>;
  signal?: AbortSignal;
  /** Range requests after connection cuts, per file. */
  maxResumes?: number;
  /** URL refreshes after 403, per file. */
  maxRefreshes?: number;
  /** The download the file belongs to, for events. */
  downloadId?: string;
  /** Told of each refresh and resume. */
  onEvent?: EventSink | undefined;
  /** Per-request retry time bound (CallOptions.maxWaitMs). */
  maxWaitMs?: number | undefined;
}

/**
 * Streams one result file. Nothing is buffered beyond what the consumer has not read yet: the
 * undici body flows through (gunzip when the file is gzip) into the returned stream.
 *
 * The first response is awaited before returning, so a missing or forbidden file rejects here
 * rather than as a stream error. Later, a connection cut mid-body is resumed with `Range` from
 * the bytes received so far (guarded by `If-Range` with the ETag, so a changed file is never
 * spliced onto the old one), and a 403 (expired pre-signed URL) fetches a fresh URL.
 */
// Over 80 lines on purpose: one file's fetch is one piece of state (the URL, the bytes received,
// the ETag, the resume and refresh counts) that its closures (`get`, the stream's pull) share;
// split into functions, that state would be passed back and forth between them.
export async function openResultFile(options: OpenFileOptions): Promise<Readable> {
  const maxResumes = options.maxResumes ?? 5;
  const maxRefreshes = options.maxRefreshes ?? 2;
  let file = options.file;
  let refreshes = 0;
  let resumes = 0;
  const emit = options.onEvent ?? (() => {});
  const downloadId = options.downloadId ?? '';

  const get = async (received: number, etag: string | undefined): Promise<StreamResponse> => {
    for (;;) {
      const headers: Record<string, string> = { 'accept-encoding': 'gzip', accept: '*/*' };
      if (received > 0) {
        headers.range = `bytes=${received}-`;
        if (etag) headers['if-range'] = etag;
      }
      try {
        // No Authorization header: a pre-signed URL carries its own, and storage refuses two.
        return await options.http.stream({
          method: 'GET',
          url: file.url,
          headers,
          signal: options.signal,
          maxWaitMs: options.maxWaitMs,
        });
      } catch (error) {
        const expired = error instanceof ApiError && error.status === 403;
        if (!expired) throw error;
        if (refreshes >= maxRefreshes) {
          if (pastItsLife(file)) throw filesExpired(file, downloadId, error);
          // Fresh URLs expired too before they were used: worth a retry later, not a mistake.
          throw new SluiceError(
            `result file ${file.name}: its URL expired ${refreshes + 1} times in a row (${error.message}); run again to fetch it anew`,
            { code: 'SLUICE_FILE_EXPIRED', cause: error },
          );
        }
        refreshes += 1;
        // The download read again: the service may give a fresh link, or a file made anew.
        const fresh = await options.refresh();
        if (fresh.name !== file.name) {
          throw new SluiceError(
            `result file ${file.name} is no longer at position ${file.index} of its download (found ${fresh.name})`,
            { code: 'SLUICE_FILE_CHANGED' },
          );
        }
        // A link given again for a file past its life is as dead as the one refused.
        if (pastItsLife(fresh)) throw filesExpired(fresh, downloadId, error);
        file = fresh;
        // The name only: the URL's query string is its signature.
        emit({ type: 'file-url-refreshed', downloadId, file: file.name, reason: 'HTTP 403' });
      }
    }
  };

  /**
   * Whether the file is past the life the service gave it (ResultFileRef.expiresAt), by the
   * service's clock (the Date header of the answer that refused it): this machine's may be days
   * off either way, and would say "run again" about a file no run can fetch, or the reverse.
   */
  const pastItsLife = (ref: ResultFileRef) =>
    ref.expiresAt !== undefined && Date.parse(ref.expiresAt) <= options.http.serviceTime();

  const first = await get(0, undefined);
  const etag = header(first.headers, 'etag');
  const gzip =
    /\bgzip\b/i.test(header(first.headers, 'content-encoding') ?? '') || /\.gz$/i.test(file.name);
  const total = contentLength(first);

  async function* bytes(): AsyncGenerator<Buffer> {
    let res: StreamResponse | undefined = first;
    let received = 0;
    try {
      for (;;) {
        // Bytes of this response that were already passed on (a 200 answering a range request).
        let skip = 0;
        if (received > 0) {
          if (res.status === 206) {
            const start = rangeStart(res.headers);
            if (start !== received) {
              throw new SluiceError(
                `result file ${file.name}: asked to resume at byte ${received}, the server sent from ${start ?? 'an unknown offset'}`,
                { code: 'SLUICE_FILE_RESUME' },
              );
            }
          } else {
            const now = header(res.headers, 'etag');
            if (etag && now && now !== etag) {
              throw new SluiceError(
                `result file ${file.name} changed on the server while it was being read`,
                {
                  code: 'SLUICE_FILE_CHANGED',
                },
              );
            }
            skip = received;
          }
        }
        const chunks = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
        for (;;) {
          let chunk: Buffer | undefined;
          try {
            chunk = await nextChunk(chunks, received, total, file.name);
          } catch (error) {
            if (options.signal?.aborted) throw options.signal.reason;
            if (error instanceof SluiceError && error.code !== 'SLUICE_FILE_SHORT') throw error;
            if (resumes >= maxResumes) {
              throw new SluiceError(
                `result file ${file.name}: the connection broke ${resumes + 1} times; gave up after ${received} bytes`,
                { code: 'SLUICE_NETWORK', cause: error },
              );
            }
            resumes += 1;
            emit({
              type: 'file-resumed',
              downloadId,
              file: file.name,
              fromByte: received,
              resume: resumes,
              reason: reasonOf(error),
            });
            res.body.destroy();
            res = undefined;
            res = await get(received, etag);
            break;
          }
          if (chunk === undefined) {
            emit({ type: 'file-fetched', downloadId, file: file.name, bytes: received, resumes });
            return;
          }
          if (skip > 0) {
            if (chunk.length <= skip) {
              skip -= chunk.length;
              continue;
            }
            chunk = chunk.subarray(skip);
            skip = 0;
          }
          received += chunk.length;
          // Outside the try above: what the consumer throws here (a full disk, say) is its own
          // failure, not the connection's, and is never answered with a resume.
          yield chunk;
        }
      }
    } finally {
      // Reached when the consumer stops early as well: release the socket.
      res?.body.destroy();
    }
  }

  const raw = Readable.from(bytes(), { objectMode: false });
  if (!gzip) return raw;
  return Readable.from(gunzipped(raw, file.name), { objectMode: false });
}

/**
 * A result file refused (403) past the life the service gives its files: running again cannot
 * fetch it, as no fresh URL brings it back; only a new download can (a mistake to fix, exit 2).
 */
function filesExpired(file: ResultFileRef, downloadId: string, cause: ApiError): SluiceError {
  const download = downloadId ? ` of download ${downloadId}` : '';
  return new SluiceError(
    `result file ${file.name}${download} expired at ${file.expiresAt} (the service serves result files for so long after it made them: 7 days on v3) and is refused (${cause.status}): running again cannot fetch it; start a new download instead (sluice run --fresh, which buys the records again)`,
    { code: 'SLUICE_DOWNLOAD_EXPIRED', cause },
  );
}

/**
 * The next chunk of a response body, undefined at its end; a body that ends before the bytes its
 * server announced (`total`, counted from `received` so far) throws SLUICE_FILE_SHORT.
 */
async function nextChunk(
  chunks: AsyncIterator<Buffer>,
  received: number,
  total: number | undefined,
  name: string,
): Promise<Buffer | undefined> {
  const next = await chunks.next();
  if (!next.done) return next.value;
  if (total !== undefined && received < total) {
    throw new SluiceError(`result file ${name} ended after ${received} of ${total} bytes`, {
      code: 'SLUICE_FILE_SHORT',
    });
  }
  return undefined;
}

/**
 * A gzip file's decoded bytes. What zlib refuses (a damaged file, one cut short, text sent as
 * gzip) is SLUICE_FILE_DAMAGED naming the file, a transfer fault that fetching it again may mend.
 */
async function* gunzipped(raw: Readable, name: string): AsyncGenerator<Buffer> {
  // pipeline() passes errors both ways and tears the pair down together.
  const decoded = pipeline(raw, createGunzip(), () => {});
  try {
    for await (const chunk of decoded as AsyncIterable<Buffer>) yield chunk;
  } catch (error) {
    if (!isZlibError(error)) throw error;
    throw new SluiceError(
      `result file ${name} is damaged: it could not be decompressed (zlib: ${(error as Error).message})`,
      { code: 'SLUICE_FILE_DAMAGED', cause: error },
    );
  } finally {
    decoded.destroy();
    raw.destroy();
  }
}

/** zlib's own errors carry a `Z_` code (Z_DATA_ERROR, Z_BUF_ERROR for a stream cut short). */
function isZlibError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function contentLength(res: StreamResponse): number | undefined {
  const range = /\/(\d+)\s*$/.exec(header(res.headers, 'content-range') ?? '');
  if (range?.[1]) return Number(range[1]);
  const length = header(res.headers, 'content-length');
  return length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
}

function rangeStart(headers: IncomingHttpHeaders): number | undefined {
  const m = /^bytes\s+(\d+)-/.exec(header(headers, 'content-range') ?? '');
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

/**
 * Opens result file `file` of download `downloadId` for either API version: when its URL has
 * expired, the download is got again (`getDownload`) for a fresh URL of the same file.
 */
export function openDownloadFile(
  base: Pick<OpenFileOptions, 'http' | 'maxResumes' | 'maxRefreshes' | 'onEvent'>,
  downloadId: string,
  file: ResultFileRef,
  getDownload: (id: string, options?: CallOptions) => Promise<DownloadInfo>,
  options?: CallOptions,
): Promise<Readable> {
  return openResultFile({
    ...base,
    file,
    downloadId,
    signal: options?.signal,
    maxWaitMs: options?.maxWaitMs,
    refresh: async () => {
      const info = await getDownload(downloadId, options);
      const fresh = info.files[file.index];
      if (!fresh) {
        throw new SluiceError(`download ${downloadId} no longer lists result file ${file.name}`, {
          code: 'SLUICE_FILE_GONE',
        });
      }
      return fresh;
    },
  });
}
