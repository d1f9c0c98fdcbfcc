/**
 * Emulator time: wall-clock time plus an offset that tests move forward through the control
 * API, so downloads progress, tokens expire and file URLs lapse without waiting.
 */
export class EmulatorClock {
  #offsetMs = 0;
  #startedAt = Date.now();

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  /** When the clock started or was last reset: where the emulator's changing world begins. */
  get startedAt(): number {
    return this.#startedAt;
  }

  advance(ms: number): void {
    this.#offsetMs += ms;
  }

  reset(): void {
    this.#offsetMs = 0;
    this.#startedAt = Date.now();
  }
}
