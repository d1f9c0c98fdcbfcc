import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Pre-signed result-file URLs, in the manner of storage services: the path, the URL generation
 * it was issued in and when it expires are signed with HMAC-SHA256, so a changed byte answers 403.
 */
export class UrlSigner {
  readonly #key: string;

  constructor(key: string) {
    this.#key = key;
  }

  /** `generation` is the emulator's file-URL generation: bumping it revokes every older URL. */
  sign(path: string, generation: number, expiresMs: number): string {
    const issued = String(generation);
    const expires = String(Math.floor(expiresMs / 1000));
    const signature = this.#mac(path, issued, expires);
    return `${path}?X-Generation=${issued}&X-Expires=${expires}&X-Signature=${signature}`;
  }

  /** 'ok', or why the URL is refused. */
  verify(
    path: string,
    query: Record<string, unknown>,
    nowMs: number,
    generation: number,
  ): 'ok' | 'invalid' | 'expired' {
    const { 'X-Generation': issued, 'X-Expires': expires, 'X-Signature': signature } = query;
    if (
      typeof issued !== 'string' ||
      typeof expires !== 'string' ||
      typeof signature !== 'string'
    ) {
      return 'invalid';
    }
    const expected = Buffer.from(this.#mac(path, issued, expires));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
    if (Number(expires) * 1000 <= nowMs || Number(issued) < generation) return 'expired';
    return 'ok';
  }

  #mac(path: string, issued: string, expires: string): string {
    return createHmac('sha256', this.#key).update(`${path}\n${issued}\n${expires}`).digest('hex');
  }
}
