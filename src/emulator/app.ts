import { setTimeout as sleep } from 'node:timers/promises';
import type {
  default as Fastify,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
} from 'fastify';
import { SluiceError } from '../errors.js';
import { acceptFormBodies } from './bodies.js';
import type { FaultAction } from './faults.js';
import { registerControl } from './routes/control.js';
import { registerFiles } from './routes/files.js';
import { registerV3 } from './routes/v3.js';
import { registerV4 } from './routes/v4.js';
import type { EmulatorContext } from './service.js';
import { HttpProblem, type LoggedRequest } from './state.js';
import { apiOf, errorBody } from './wire.js';

declare module 'fastify' {
  interface FastifyRequest {
    logEntry?: LoggedRequest;
    startedAt: number;
    dropAfter?: boolean;
  }
}

export function sendProblem(
  ctx: EmulatorContext,
  request: FastifyRequest,
  reply: FastifyReply,
  problem: HttpProblem,
): FastifyReply {
  const path = request.url.split('?')[0] ?? '';
  const { contentType, body } = errorBody(
    apiOf(path),
    ctx.forms.errorsList,
    problem.status,
    problem.message,
    problem.details,
  );
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type(contentType).send(body);
}

/** Fastify's own errors (bad JSON, wrong types, unknown fields) in the service's error shape. */
function toProblem(error: FastifyError): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error.validation) {
    const details = error.validation.map((v) => {
      const params = v.params as Record<string, unknown>;
      const base = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
      if (v.keyword === 'required') {
        const field = String(params.missingProperty);
        return { field, message: `required property '${field}' is missing` };
      }
      if (v.keyword === 'additionalProperties') {
        const field = String(params.additionalProperty);
        return { field, message: `unknown property '${field}'` };
      }
      return {
        field: base || String(error.validationContext ?? 'body'),
        message: v.message ?? 'is invalid',
      };
    });
    const message = details.map((d) =>
      d.message.includes(d.field) ? d.message : `${d.field} ${d.message}`,
    );
    return new HttpProblem(400, `Invalid request: ${message.join('; ')}`, details);
  }
  const status =
    error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
  const message =
    status === 500
      ? 'internal error'
      : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? 'Content-Type must be application/json'
        : error.message;
  return new HttpProblem(status, message);
}

/**
 * The emulator's HTTP server, on fastify (`fastify`: the module's default export, which the
 * caller loads: see `loadFastify`).
 */
export function buildApp(ctx: EmulatorContext, fastify: typeof Fastify): FastifyInstance {
  const app = fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    forceCloseConnections: true,
    // Bodies are checked as sent: no coercion, no silent removal of unknown fields.
    ajv: {
      customOptions: {
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: false,
        allErrors: true,
      },
    },
    frameworkErrors: (error, request, reply) => {
      // Answered before any hook runs (e.g. a path that is not valid percent-encoding): log it here.
      const path = request.url.split('?')[0] ?? '';
      if (apiOf(path) !== 'control') {
        ctx.state.requests.push({
          method: request.method,
          path,
          time: new Date(ctx.clock.now()).toISOString(),
          status: 400,
          duration_ms: 0,
        });
      }
      void sendProblem(ctx, request, reply, new HttpProblem(400, `bad request: ${error.message}`));
    },
  });
  app.decorateRequest('startedAt', 0);
  // Operations without a body (DELETE) may still carry Content-Type: application/json.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new HttpProblem(400, 'Invalid request: the body is not valid JSON'), undefined);
    }
  });
  logRequests(app, ctx);
  answerInTime(app, ctx);
  answerProblems(app, ctx);
  if (ctx.forms.lenientBodies) acceptFormBodies(app);
  registerV4(app, ctx);
  registerV3(app, ctx);
  registerFiles(app, ctx);
  registerControl(app, ctx);
  return app;
}

/**
 * Each request of the service's API in the request log (`/_emulator/requests`), with its status
 * and duration once answered, and the faults injected into it before anything is done.
 */
function logRequests(app: FastifyInstance, ctx: EmulatorContext): void {
  app.addHook('onRequest', async (request, reply) => {
    request.startedAt = performance.now();
    const path = request.url.split('?')[0] ?? '';
    const api = apiOf(path);
    if (api === 'control') return;
    const entry: LoggedRequest = {
      method: request.method,
      path,
      time: new Date(ctx.clock.now()).toISOString(),
      status: 0,
      duration_ms: 0,
    };
    request.logEntry = entry;
    if (/^\/v3\/data\//.test(path)) entry.sent = { ...(request.query as Record<string, unknown>) };
    ctx.state.requests.push(entry);
    ctx.state.settle();
    const fault = ctx.faults.pick(request.method, path, api === 'files');
    if (fault) return injectFault(ctx, request, reply, fault);
  });

  // The body of a search as it came, for tests that check what a client sent (parsed, before
  // the route's schema refuses or coerces anything).
  app.addHook('preValidation', async (request) => {
    const entry = request.logEntry;
    const body = request.body;
    if (entry && /\/search$/.test(entry.path) && body && typeof body === 'object') {
      entry.sent = { ...(body as Record<string, unknown>) };
    }
  });

  const finish = (request: FastifyRequest, status: number) => {
    const entry = request.logEntry;
    if (!entry || entry.duration_ms > 0) return;
    entry.status = status;
    entry.duration_ms = Math.max(
      0.001,
      Math.round((performance.now() - request.startedAt) * 1000) / 1000,
    );
    ctx.options.log?.(
      `${entry.method} ${entry.path} ${status || 'dropped'} ${entry.duration_ms.toFixed(1)}ms`,
    );
  };
  app.addHook('onResponse', async (request, reply) => {
    finish(
      request,
      request.dropAfter || (reply.raw.socket?.destroyed && !reply.raw.writableFinished)
        ? 0
        : reply.statusCode,
    );
  });
  app.addHook('onRequestAbort', async (request) => finish(request, 0));
}

/** A fault picked for a request (faults.ts), done to it before its route runs. */
async function injectFault(
  ctx: EmulatorContext,
  request: FastifyRequest,
  reply: FastifyReply,
  fault: FaultAction,
): Promise<FastifyReply | undefined> {
  if (fault.kind === 'slow') await sleep(fault.delayMs);
  else if (fault.kind === 'reset') {
    // Drop the connection and stop here: nothing is done, nothing is charged.
    request.raw.socket.destroy();
    return reply.hijack();
  } else if (fault.kind === 'reset-after') request.dropAfter = true;
  else if (fault.kind === 'cut')
    (request as { cutFault?: number }).cutFault = fault.afterBytes ?? -1;
  else if (fault.kind === 'status') {
    const headers: Record<string, string> =
      fault.retryAfter === undefined ? {} : { 'retry-after': String(fault.retryAfter) };
    const message =
      fault.status === 429
        ? 'Too many requests, slow down'
        : 'The service is temporarily unavailable';
    return sendProblem(ctx, request, reply, new HttpProblem(fault.status, message, [], headers));
  }
  return undefined;
}

/**
 * The service's own time in every answer (the Date header), from the emulator's clock: a client
 * judges the service's times (a file's expiry) by it, whatever its own clock says. And the
 * connection dropped after the answer when a fault says so.
 */
function answerInTime(app: FastifyInstance, ctx: EmulatorContext): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('date', new Date(ctx.clock.now()).toUTCString());
    return payload;
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (request.dropAfter) {
      // The work is done (a download may have started) but the caller never hears of it.
      reply.raw.socket?.destroy();
    }
    return payload;
  });
}

/** Errors and unknown operations in the service's error shape (wire.ts). */
function answerProblems(app: FastifyInstance, ctx: EmulatorContext): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = toProblem(error);
    if (problem.status === 500)
      ctx.options.log?.(`internal error on ${request.method} ${request.url}: ${error.stack}`);
    return sendProblem(ctx, request, reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      ctx,
      request,
      reply,
      new HttpProblem(404, `no such operation: ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}

/**
 * fastify, which only the emulator uses: an optional dependency of sluice (installed with it for
 * development, not for every user of the package), asked for by name when it is missing.
 */
export async function loadFastify(): Promise<typeof Fastify> {
  try {
    return (await import('fastify')).default;
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new SluiceError(
      'the emulator runs on the fastify package, which is not installed here: npm install fastify@5 (sluice itself does not need it)',
      { code: 'SLUICE_USAGE', cause: error },
    );
  }
}
