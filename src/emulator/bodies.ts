import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpProblem } from './state.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body came as form fields, all text: typed by the route's schema before it is checked. */
    formFields?: boolean;
  }
}

const FORM = 'application/x-www-form-urlencoded';

/**
 * Form-encoded request bodies, as some real clients send them: a login posted as a web form
 * (`email=...&password=...`), or JSON text under a form Content-Type (an HTTP library's
 * default for any posted string). JSON text is read as JSON; form fields are text, so each is
 * given the type the route's schema declares for it (`num_records=10` a number, `download=true`
 * a boolean) before the schema checks the body. Only where the wire form accepts them
 * (`lenientBodies`): under the contract a body other than JSON is refused with 415.
 */
export function acceptFormBodies(app: FastifyInstance): void {
  app.addContentTypeParser(FORM, { parseAs: 'string' }, (request, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    if (text.startsWith('{')) {
      try {
        return done(null, JSON.parse(text));
      } catch {
        return done(new HttpProblem(400, 'Invalid request: the body is not valid JSON'), undefined);
      }
    }
    request.formFields = true;
    const fields: Record<string, string | string[]> = {};
    for (const [name, value] of new URLSearchParams(text)) {
      const before = fields[name];
      fields[name] = before === undefined ? value : [...[before].flat(), value];
    }
    done(null, fields);
  });
  app.addHook('preValidation', async (request) => {
    if (request.formFields) typeFormFields(request);
  });
}

/** Gives each form field the type its route's schema declares; the schema then checks it. */
function typeFormFields(request: FastifyRequest): void {
  const schema = request.routeOptions.schema?.body as
    | { properties?: Record<string, { type?: string }> }
    | undefined;
  const body = request.body as Record<string, unknown> | undefined;
  if (!schema?.properties || !body) return;
  for (const [name, value] of Object.entries(body)) {
    const type = schema.properties[name]?.type;
    if (type === 'array') body[name] = [value].flat();
    else if (typeof value !== 'string') continue;
    else if (type === 'integer' && /^-?\d+$/.test(value)) body[name] = Number(value);
    else if (type === 'boolean' && (value === 'true' || value === 'false'))
      body[name] = value === 'true';
  }
}
