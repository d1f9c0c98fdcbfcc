import { readFileSync, statSync } from 'node:fs';
import { SluiceError } from '../errors.js';

/** A secret file holds one value: a password, a token, a URL. Past this, it is the wrong file. */
const MAX_SECRET_BYTES = 64 * 1024;

/**
 * The value a mounted secret holds (Docker's and Kubernetes' secrets, `*_FILE` variables,
 * `${file:PATH}`): the file's text without its trailing newlines, as the shell's `$(< file)`
 * reads it. A file that is missing, unreadable, empty or too big is an error naming the file and
 * what pointed at it (`what`: the variable), never its content.
 */
export function readSecretFile(path: string, what?: string): string {
  const fail = (problem: string): never => {
    throw new SluiceError(`${what ? `${what}: ` : ''}secret file ${path} ${problem}`, {
      code: 'SLUICE_SECRET_FILE',
    });
  };
  let text: string;
  try {
    const stat = statSync(path);
    if (stat.isDirectory()) fail('is a folder, not a file');
    if (stat.size > MAX_SECRET_BYTES) {
      fail(`is ${stat.size.toLocaleString('en-US')} bytes: a secret file holds one value`);
    }
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof SluiceError) throw error;
    return fail(`cannot be read: ${fileProblem(error)}`);
  }
  const value = text.replace(/(\r?\n)+$/, '');
  if (value === '') fail('is empty');
  return value;
}

/** What the system said of a file, in words (no stack, no content). */
export function fileProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'is a folder, not a file';
  return (error as Error).message;
}
