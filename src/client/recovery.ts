import { plural } from '../util/words.js';
import { DownloadUncertainError } from './errors.js';
import type { EventSink } from './events.js';
import { isAmbiguousFailure } from './http.js';
import type { DownloadInfo, DownloadStart } from './types.js';

export interface StartSteps {
  /** What is being started, for messages (`properties download`). */
  what: string;
  list: () => Promise<DownloadInfo[]>;
  start: () => Promise<DownloadStart>;
  /** Whether a download that appeared meanwhile is the one this start asked for. */
  isOurs: (download: DownloadInfo) => boolean;
  /** The caller's check, used instead of `isOurs` when given (StartDownloadOptions.verify). */
  verify?: ((download: DownloadInfo) => Promise<boolean>) | undefined;
  /**
   * The service's time by its own clock (ServiceClient.serviceTime), to tell downloads created
   * since the start (by their `createdAt`, the service's time) from older ones.
   */
  now: () => number;
  onEvent: EventSink;
  signal?: AbortSignal | undefined;
}

/**
 * Slack around the moment the start was sent, both by the service's clock (`now` converts this
 * machine's time by the service's Date header, whole seconds): without a listing from before the
 * start, a download whose `createdAt` is at most this much before the start was sent may be the
 * one it created.
 */
export const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Starts a download so that an ambiguous failure never pays twice. The downloads that exist are
 * noted first; when the start fails in a way that leaves open whether the service started it,
 * the list is read again and the one new download that is ours is adopted. Only when none
 * appeared is the start sent again, once.
 *
 * The first listing is a safeguard, not a condition: when it fails the start goes on (reported
 * through the event hook), and after an ambiguous failure the downloads created since just
 * before the start was sent (by `createdAt`, give or take CLOCK_SKEW_MS) take the place of the
 * new ones. Whatever cannot be told apart ends in DownloadUncertainError, never a second start.
 */
export async function startDownloadOnce(steps: StartSteps): Promise<DownloadStart> {
  let before: Set<string> | undefined;
  try {
    before = new Set((await steps.list()).map((d) => d.id));
  } catch (error) {
    if (steps.signal?.aborted) throw error;
    steps.onEvent({
      type: 'safeguard-failed',
      operation: 'list downloads',
      what: steps.what,
      message: messageOf(error),
    });
  }
  let sentAt: number | undefined;
  for (let attempt = 1; ; attempt++) {
    // The first send: a download the second one might create is newer still.
    sentAt ??= steps.now();
    try {
      return await steps.start();
    } catch (error) {
      if (!isAmbiguousFailure(error)) throw error;
      const failed = `starting the ${steps.what} failed (${messageOf(error)})`;
      let after: DownloadInfo[];
      try {
        after = await steps.list();
      } catch (listError) {
        throw new DownloadUncertainError(
          `${failed} and listing downloads to see whether it started failed too (${messageOf(listError)}); check the downloads before starting it again`,
          error,
        );
      }
      const found = await identify(steps, after, before, sentAt, failed, error);
      if (found) {
        steps.onEvent({
          type: 'start-recovered',
          what: steps.what,
          reason: messageOf(error),
          outcome: 'adopted',
          downloadId: found.id,
        });
        return {
          id: found.id,
          ...(found.numFound === undefined ? {} : { numFound: found.numFound }),
          recovered: true,
        };
      }
      // Nothing was created: the failure happened before the service did the work.
      if (attempt >= 2) throw error;
      steps.onEvent({
        type: 'start-recovered',
        what: steps.what,
        reason: messageOf(error),
        outcome: 'sent-again',
      });
    }
  }
}

/**
 * The download the failed start created, undefined when it created none; throws
 * DownloadUncertainError when that cannot be told.
 */
async function identify(
  steps: StartSteps,
  after: DownloadInfo[],
  before: Set<string> | undefined,
  sentAt: number,
  failed: string,
  cause: unknown,
): Promise<DownloadInfo | undefined> {
  const uncertain = (problem: string) =>
    new DownloadUncertainError(
      `${failed} and ${problem}; check the downloads before starting it again`,
      cause,
    );
  // Candidates: new since the listing before the start, or else created since just before it
  // was sent. A download that does not say when it was created cannot be ruled out.
  let candidates: DownloadInfo[];
  const undated = new Set<string>();
  if (before) {
    candidates = after.filter((d) => !before.has(d.id));
  } else {
    candidates = after.filter((d) => {
      const created = d.createdAt === undefined ? Number.NaN : Date.parse(d.createdAt);
      if (Number.isNaN(created)) {
        undated.add(d.id);
        return true;
      }
      return created >= sentAt - CLOCK_SKEW_MS;
    });
  }
  let ours: DownloadInfo[];
  if (steps.verify) {
    const rejected: string[] = [];
    ours = [];
    for (const d of candidates) {
      try {
        if (await steps.verify(d)) ours.push(d);
        else rejected.push(d.id);
      } catch (error) {
        if (steps.signal?.aborted) throw error;
        rejected.push(`${d.id} (checking it failed: ${messageOf(error)})`);
      }
    }
    if (ours.length === 0 && rejected.length > 0) {
      throw uncertain(
        `${plural(rejected.length, 'download')} that may be the one it started could not be verified as this one: ${rejected.join(', ')}`,
      );
    }
  } else {
    ours = candidates.filter((d) => steps.isOurs(d));
  }
  const dateless = ours.filter((d) => undated.has(d.id));
  if (dateless.length > 0) {
    throw uncertain(
      `the downloads could not be listed before it, and ${dateless.map((d) => d.id).join(', ')} ${dateless.length === 1 ? 'does' : 'do'} not say when it was created, so whether it is this one cannot be told`,
    );
  }
  if (ours.length > 1) {
    const appeared = before
      ? 'new downloads appeared meanwhile'
      : 'downloads were created about then';
    throw uncertain(
      `${ours.length} ${appeared} (${ours.map((d) => d.id).join(', ')}); cannot tell which is this one`,
    );
  }
  return ours[0];
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
