/**
 * Emulator time: wall-clock time plus an offset that tests move forward through the control
 * API, so downloads progress, tokens expire and file URLs lapse without waiting.
 */
export class Clock {
  #offsetMs = 0;

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  advance(ms: number): void {
    this.#offsetMs += ms;
  }

  reset(): void {
    this.#offsetMs = 0;
  }
}
