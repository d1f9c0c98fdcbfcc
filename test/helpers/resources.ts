/**
 * What keeps a process alive once its work is done: a pooled connection, its idle timer, a
 * listening socket. `lingering` answers which such resources are there now that were not
 * `before`, once the file requests still in flight (a stream's close, a write) have finished:
 * those end on their own and never keep a process alive.
 */

/** Requests libuv completes by itself, however the code under test behaves. */
const IN_FLIGHT = new Set(['CloseReq', 'FSReqCallback', 'FSReqPromise', 'FileHandleCloseReq']);

/** The kinds of the resources keeping the event loop alive now (sockets, timers...). */
export function activeResources(): string[] {
  return process.getActiveResourcesInfo();
}

/**
 * What is active now and was not `before`, one entry per resource more, after at most
 * `settleMs` of waiting for file requests in flight to finish.
 */
export async function lingering(before: readonly string[], settleMs = 2_000): Promise<string[]> {
  const until = Date.now() + settleMs;
  let left = leftOver(before, activeResources());
  while (left.some((kind) => IN_FLIGHT.has(kind)) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    left = leftOver(before, activeResources());
  }
  return left;
}

/** What `after` holds that `before` did not, one entry per resource more. */
function leftOver(before: readonly string[], after: readonly string[]): string[] {
  const left = [...before];
  return after.filter((kind) => {
    const at = left.indexOf(kind);
    if (at < 0) return true;
    left.splice(at, 1);
    return false;
  });
}
