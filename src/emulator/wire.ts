import { STATUS_CODES } from 'node:http';
import type { WireMode } from './options.js';

export type Api = 'v4' | 'v3' | 'files' | 'control';

export function apiOf(path: string): Api {
  if (path.startsWith('/v3/') || path === '/v3') return 'v3';
  if (path.startsWith('/files/')) return 'files';
  if (path.startsWith('/_emulator/')) return 'control';
  return 'v4';
}

/**
 * The error body the service sends for a status, in the shapes of service-interface.md section 7
 * (v4 `{error, message, code, details}`, v3 by status) or, for v4 in the real wire form, the
 * `{"errors": [...]}` shape of wire-notes.md.
 */
export function errorBody(
  api: Api,
  wire: WireMode,
  status: number,
  message: string,
  details: { field: string; message: string }[],
): { contentType: string; body: string } {
  const name = STATUS_CODES[status] ?? 'Error';
  if (api === 'files') {
    const code =
      status === 403 ? 'AccessDenied' : status === 404 ? 'NoSuchKey' : name.replaceAll(' ', '');
    return {
      contentType: 'application/xml',
      body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>\n`,
    };
  }
  let body: unknown;
  if (api === 'v3') {
    if (status === 400) body = { error: message };
    else if (status >= 500) body = { error: name, message, code: status, requestId: requestId() };
    else body = { error: name, message, code: status };
  } else if (api === 'v4' && wire === 'real') {
    body = { errors: [message, ...details.map((d) => `${d.field}: ${d.message}`)] };
  } else {
    body = { error: name, message, code: status, details };
  }
  return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}

let requestCounter = 0;
function requestId(): string {
  requestCounter += 1;
  return `req-${Date.now().toString(36)}-${requestCounter.toString(36)}`;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** v3 dates: `2017-3-7 17:44:05`, month and day not zero-padded, UTC. */
export function v3Date(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${d.getUTCMonth() + 1}-${d.getUTCDate()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

export function isoDate(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `scheme://host:port` of a request, for absolute file URLs. */
export function originOf(request: { protocol: string; host: string }): string {
  return `${request.protocol}://${request.host}`;
}
