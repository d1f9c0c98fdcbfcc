import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * Local receivers for what sluice sends out: an HTTP endpoint that keeps each request (a
 * webhook, a Slack incoming webhook) and an SMTP inbox that keeps each message. Real servers on
 * free ports, as a user's would be.
 */

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface HttpReceiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** An HTTP receiver; `status` chooses each answer (200 `ok` by default). */
export async function startHttpReceiver(
  status: (request: Received, index: number) => number = () => 200,
): Promise<HttpReceiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const request = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      received.push(request);
      const code = status(request, received.length - 1);
      res.writeHead(code, { 'content-type': 'text/plain' });
      res.end(code < 300 ? 'ok' : 'not now');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Mail {
  to: string[];
  /** With soft line breaks and folded headers undone, for reading. */
  text: string;
  /** The login the client gave, if any. */
  user?: string;
}

export interface SmtpInbox {
  port: number;
  mails: Mail[];
  close(): Promise<void>;
}

/** An SMTP server without TLS that takes any login and keeps every message. */
export async function startSmtpInbox(): Promise<SmtpInbox> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      let raw = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        raw += chunk;
      });
      stream.on('end', () => {
        mails.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          text: raw.replace(/=\r?\n/g, '').replace(/\r?\n[ \t]+/g, ' '),
          ...(typeof session.user === 'string' ? { user: session.user } : {}),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(resolve)) };
}
