import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import { SluiceError, UsageError } from '../../../errors.js';
import { describeError } from '../../exit-codes.js';

/** One question of `sluice init`, and how its answer is checked. */
export interface Question<T> {
  /** As asked: `Data type (properties, businesses, products, people)`. */
  text: string;
  /** The answer an empty line (or `--yes`) gives; none: an answer is needed. */
  fallback?: string;
  /** The flag that answers it, for the message when `--yes` leaves it unanswered. */
  flag: string;
  /** The answer, or a SluiceError saying what is wrong with it (asked again, or the error). */
  check(answer: string): T | Promise<T>;
}

/** Asks on a terminal, or reads answers piped in, one a line. */
export interface Asker {
  ask(question: string, fallback?: string): Promise<string>;
  /** A line between the questions (what a count found, what was wrong with an answer). */
  say(line: string): void;
  close(): void;
}

/**
 * Questions on `output` (stderr: stdout is the command's result), answers from `input`, with
 * Node's readline. Its lines are read through its async iterator, which keeps the lines piped
 * in ahead of the questions (`rl.question` would drop those that come while a count is asked).
 */
export function askerOn(input: Readable, output: Writable, signal?: AbortSignal): Asker {
  const terminal = Boolean((input as { isTTY?: boolean }).isTTY);
  const rl = createInterface({ input, output, terminal, ...(signal ? { signal } : {}) });
  let interrupted = false;
  // Ctrl-C on a terminal comes to readline, not to the process.
  rl.on('SIGINT', () => {
    interrupted = true;
    rl.close();
  });
  const lines = rl[Symbol.asyncIterator]();
  return {
    async ask(question, fallback) {
      rl.setPrompt(`${question}${fallback === undefined ? '' : ` [${fallback}]`}: `);
      rl.prompt();
      const next = await lines.next();
      if (interrupted || signal?.aborted) {
        throw new SluiceError('interrupted: nothing was written', { code: 'SLUICE_INTERRUPTED' });
      }
      if (next.done) {
        throw new UsageError(
          `no answer to "${question}" (the input ended): nothing was written; in a script, give sluice init --yes and the flags`,
        );
      }
      // Piped answers are not echoed: end the prompt's line.
      if (!terminal) output.write('\n');
      const answer = next.value.trim();
      return answer === '' && fallback !== undefined ? fallback : answer;
    },
    say(line) {
      output.write(`${line}\n`);
    },
    close() {
      rl.close();
    },
  };
}

/**
 * The answer to a question: the flag's when given (a mistake in it is an error, as any flag's),
 * else with `--yes` (no asker) its fallback, else asked until the answer passes its check.
 */
export async function answer<T>(
  given: unknown,
  question: Question<T>,
  asker: Asker | undefined,
): Promise<T> {
  if (given !== undefined) return question.check(String(given));
  if (asker === undefined) {
    if (question.fallback === undefined) {
      throw new UsageError(
        `sluice init --yes asks nothing: give ${question.flag} (${question.text.toLowerCase()})`,
      );
    }
    return question.check(question.fallback);
  }
  for (;;) {
    const text = await asker.ask(question.text, question.fallback);
    try {
      return await question.check(text);
    } catch (error) {
      if (!(error instanceof SluiceError) || error.code === 'SLUICE_INTERRUPTED') throw error;
      asker.say(`  ${describeError(error).replaceAll('\n', '\n  ')}`);
    }
  }
}
