import type { ClientEvent, ExchangeEvent } from '../../client/index.js';
import type { Logger } from '../../log.js';
import { num, span } from '../../util/words.js';

/**
 * What the client does on its own, in the log at info: retries, new logins, refreshed file
 * URLs, resumed files. Without it these happen silently, and a slow run cannot be explained.
 */
export function logClientEvent(logger: Logger): (event: ClientEvent) => void {
  return (event) => {
    const { type, ...fields } = event;
    // A clock days off is worth the reader's attention: times in the state tables are this
    // machine's. The rest is what a client does on its own, at info.
    if (type === 'clock-skew') logger.warn({ client: type, ...fields }, describeEvent(event));
    // A file read whole, for an on-call engineer (-v): its bytes.
    else if (type === 'file-fetched')
      logger.debug({ client: type, ...fields }, describeEvent(event));
    else logger.info({ client: type, ...fields }, describeEvent(event));
  };
}

/**
 * Each request to the service and its answer, in the log at debug (`-v`), for an on-call
 * engineer: method, path and query (values that may be secrets redacted), status, milliseconds.
 * Undefined when the log shows no debug lines: the client then skips the work.
 */
export function logExchange(logger: Logger): ((event: ExchangeEvent) => void) | undefined {
  if (!logger.isLevelEnabled('debug')) return undefined;
  return (event) => {
    const { method, path, status, error, ms, attempt } = event;
    logger.debug(
      { client: 'request', ...event },
      `${method} ${path} -> ${status ?? error} in ${ms} ms${attempt > 1 ? ` (attempt ${attempt})` : ''}`,
    );
  };
}

function describeEvent(event: ClientEvent): string {
  switch (event.type) {
    case 'file-fetched':
      return `fetched ${event.file} of download ${event.downloadId}: ${num(event.bytes)} bytes${event.resumes > 0 ? ` (${event.resumes} resumes)` : ''}`;
    case 'retry':
      return `retrying ${event.method} ${event.path} in ${Math.round(event.delayMs)} ms (attempt ${event.attempt}: ${event.reason})`;
    case 'reauthenticated':
      return `logged in again (the token had expired) for ${event.method} ${event.path}`;
    case 'file-url-refreshed':
      return `fresh URL for ${event.file} of download ${event.downloadId} (${event.reason})`;
    case 'file-resumed':
      return `resuming ${event.file} from byte ${event.fromByte} (${event.reason})`;
    case 'safeguard-failed':
      return `could not list downloads before ${event.what} (${event.message}); going on`;
    case 'clock-skew':
      return `this machine's clock is ${span(Math.abs(event.offsetMs))} ${event.offsetMs > 0 ? 'behind' : 'ahead of'} the service's (its Date header): the service's times (file expiry, when a download was made) are judged by its clock; the times sluice writes are this machine's`;
    case 'start-recovered':
      return `starting ${event.what} failed (${event.reason}); ${event.outcome === 'adopted' ? `adopted download ${event.downloadId}` : 'nothing had started: sent it again'}`;
  }
}
