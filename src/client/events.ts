/**
 * What the client does on its own behind a call (retries, logins, URL refreshes, resumes,
 * recoveries), for the CLI's log. Events carry paths and names only: never a password, a token,
 * an Authorization header or the query string of a signed URL.
 */
export type ClientEvent =
  /** A request failed in a way worth another try; the transport waits `delayMs` first. */
  | {
      type: 'retry';
      method: string;
      /** URL path without its query string. */
      path: string;
      /** The attempt that failed (1 for the first). */
      attempt: number;
      delayMs: number;
      /** `HTTP 503` or the network error code. */
      reason: string;
    }
  /** A result file read to its end: its bytes as received (before gunzip), and resumes. */
  | { type: 'file-fetched'; downloadId: string; file: string; bytes: number; resumes: number }
  /** The service answered 401 (an expired token): the client logged in again and resent. */
  | { type: 'reauthenticated'; method: string; path: string }
  /** A result file's URL was refused (403, expired): the download was read again for a fresh one. */
  | { type: 'file-url-refreshed'; downloadId: string; file: string; reason: string }
  /** A result file's connection broke mid-body: the rest is asked for with a Range request. */
  | {
      type: 'file-resumed';
      downloadId: string;
      file: string;
      /** The byte the resume asks for (bytes already received). */
      fromByte: number;
      /** Resumes of this file so far, this one included. */
      resume: number;
      reason: string;
    }
  /**
   * A call made only as a safeguard failed, and the client went on without it (the listing of
   * downloads taken before a download start, so that an ambiguous failure can be told apart).
   */
  | { type: 'safeguard-failed'; operation: string; what: string; message: string }
  /**
   * A download start failed ambiguously (the request may have reached the service) and the
   * client found out what happened: `adopted` the download it had created, or `sent-again`
   * because none had been created.
   */
  /**
   * The service's clock (its `Date` header) is `offsetMs` away from this machine's (positive:
   * the service is ahead); said once per client. sluice judges the service's times by its clock.
   */
  | { type: 'clock-skew'; offsetMs: number }
  | {
      type: 'start-recovered';
      what: string;
      reason: string;
      outcome: 'adopted' | 'sent-again';
      downloadId?: string;
    };

export type EventSink = (event: ClientEvent) => void;

/**
 * The hook as the client calls it: a listener that throws (a logger whose stream closed, say)
 * must not turn a working call into a failed one, so what it throws is dropped here.
 */
export function eventSink(onEvent: EventSink | undefined): EventSink {
  if (!onEvent) return () => {};
  return (event) => {
    try {
      onEvent(event);
    } catch {
      // A log line lost; the call goes on.
    }
  };
}

/** A short reason for an error, for events: its code, else its name; never its message. */
export function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return error instanceof Error ? error.name : 'error';
}
