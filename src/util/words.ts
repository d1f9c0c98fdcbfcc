/** Numbers and counted words as messages and tables print them (`1,234`, `2 files`). */

export function num(n: number): string {
  return n.toLocaleString('en-US');
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${num(n)} ${n === 1 ? word : many}`;
}

/** A span of time in its largest whole unit, for messages (`2 days`, `3 hours`, `45 seconds`). */
export function span(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
  ];
  for (const [size, unit] of units) if (ms >= size) return plural(Math.round(ms / size), unit);
  return plural(Math.round(ms / 1000), 'second');
}
