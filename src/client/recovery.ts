import { DownloadUncertainError } from './errors.js';
import { isAmbiguousFailure } from './http.js';
import type { DownloadInfo, DownloadStart } from './types.js';

export interface StartSteps {
  /** What is being started, for messages (`properties download`). */
  what: string;
  list: () => Promise<DownloadInfo[]>;
  start: () => Promise<DownloadStart>;
  /** Whether a download that appeared meanwhile is the one this start asked for. */
  isOurs: (download: DownloadInfo) => boolean;
}

/**
 * Starts a download so that an ambiguous failure never pays twice. The downloads that exist
 * are noted first; when the start fails in a way that leaves open whether the service started
 * it, the list is read again and the one new download is adopted. Only when none appeared is
 * the start sent again, once.
 */
export async function startDownloadOnce(steps: StartSteps): Promise<DownloadStart> {
  const before = new Set((await steps.list()).map((d) => d.id));
  for (let attempt = 1; ; attempt++) {
    try {
      return await steps.start();
    } catch (error) {
      if (!isAmbiguousFailure(error)) throw error;
      let after: DownloadInfo[];
      try {
        after = await steps.list();
      } catch (listError) {
        throw new DownloadUncertainError(
          `starting the ${steps.what} failed (${(error as Error).message}) and listing downloads to see whether it started failed too (${(listError as Error).message}); check the downloads before starting it again`,
          error,
        );
      }
      const fresh = after.filter((d) => !before.has(d.id) && steps.isOurs(d));
      const found = fresh[0];
      if (fresh.length === 1 && found) {
        return {
          id: found.id,
          ...(found.numFound === undefined ? {} : { numFound: found.numFound }),
          recovered: true,
        };
      }
      if (fresh.length > 1) {
        throw new DownloadUncertainError(
          `starting the ${steps.what} failed (${(error as Error).message}) and ${fresh.length} new downloads appeared meanwhile (${fresh.map((d) => d.id).join(', ')}); cannot tell which is this one`,
          error,
        );
      }
      // Nothing was created: the failure happened before the service did the work.
      if (attempt >= 2) throw error;
    }
  }
}
