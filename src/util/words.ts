/** Numbers and counted words as messages and tables print them (`1,234`, `2 files`). */

export function num(n: number): string {
  return n.toLocaleString('en-US');
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${num(n)} ${n === 1 ? word : many}`;
}
