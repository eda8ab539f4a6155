import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest, RawRequestDefaultExpression } from 'fastify';
import sjson from 'secure-json-parse';
import { AppError } from '../lib/errors.ts';

/** Request-level plumbing that buildApp wires in: logging hygiene, request ids, proxies, body guards. */

/** Never in a log line: credentials, tokens, and the headers that carry them. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'client_secret',
  'clientSecret',
  'access_token',
  '*.client_secret',
  '*.clientSecret',
  '*.access_token',
  '*.authorization',
  'err.rawPacket',
];

// A client that puts a secret in the query string (a mistake, but a likely one) must not get it logged.
const SECRET_QUERY = /([?&](?:client_secret|access_token|token|code|password)=)[^&]*/gi;

export function serializeRequest(req: FastifyRequest) {
  return { method: req.method, url: req.url.replace(SECRET_QUERY, '$1[REDACTED]'), host: req.host, remoteAddress: req.ip };
}

export const trustHops =
  (hops: number) =>
  (_address: string, hop: number): boolean =>
    hop < hops;

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echo a sane incoming X-Request-Id (so a merchant can correlate), otherwise make one. */
export function requestId(req: RawRequestDefaultExpression): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Bodies are read as UTF-8 and uncompressed: say so (415) instead of misreading another charset or a gzip body. */
export function refuseUnreadableBody(request: FastifyRequest): void {
  const charset = /;\s*charset="?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
  if (charset && charset.toLowerCase() !== 'utf-8' && charset.toLowerCase() !== 'utf8') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Send request bodies as UTF-8, not ${charset}`);
  }
  const encoding = request.headers['content-encoding'];
  if (encoding && encoding.toLowerCase() !== 'identity') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${encoding} is not supported; send the body uncompressed`);
  }
}

/** How many times Authorization and Host appear in the raw request (Node keeps only the first of each), in one pass. */
function authorizationAndHostCounts(request: FastifyRequest): { authorizations: number; hosts: number } {
  const raw = request.raw.rawHeaders;
  let authorizations = 0;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 4) {
      if (name.toLowerCase() === 'host') hosts++;
    } else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++;
  }
  return { authorizations, hosts };
}

const headerProblem = (name: string, detail: string, message: string) =>
  new AppError('VALIDATION_FAILED', detail, { errors: [{ path: `/headers/${name}`, message }] });

/**
 * Requests whose meaning depends on which copy of a header one reads are refused (400), before
 * routing's hooks authenticate anything: with two Authorization headers Node keeps the first, a
 * proxy may keep the last, and they would disagree about who is calling. An HTTP/1.1 request
 * without Host (RFC 9112 3.2) gets the same envelope as every other error (Node's own answer is a
 * bare 400, which is why the server is built with requireHostHeader: false).
 */
export function refuseAmbiguousHeaders(request: FastifyRequest): void {
  const { authorizations, hosts } = authorizationAndHostCounts(request);
  if (authorizations > 1) {
    throw headerProblem('authorization', 'Send exactly one Authorization header', 'must appear at most once');
  }
  if (hosts > 1) throw headerProblem('host', 'Send exactly one Host header', 'must appear at most once');
  if (hosts === 0 && request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1) {
    throw headerProblem('host', 'HTTP/1.1 requests must carry a Host header (RFC 9112 section 3.2)', 'is required');
  }
}

/**
 * JSON bodies are read as strict UTF-8 and must hold only well-formed Unicode strings. Invalid UTF-8
 * bytes would otherwise become U+FFFD silently, and a lone surrogate ("\ud800", legal JSON) would be
 * echoed by the creation answer while the database stores U+FFFD: a later read would differ from it.
 * Both are a 400 naming where the bad text is. Fastify's own parser does the rest (__proto__ and
 * constructor.prototype keys refused, empty body).
 */
export function strictJsonParser(app: FastifyInstance): void {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      // An operation without a request body (accept, rotate-secret, ...) sent with `content-type:
      // application/json` and nothing after it, as curl with a shared header list does: no body, not
      // an empty JSON document. Operations that take a body still refuse an empty one.
      if ((body as Buffer).length === 0 && !request.routeOptions.schema?.body) return done(null, undefined);
      done(null, parseJsonBody(utf8, body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

const bodyProblem = (detail: string, message: string) => new AppError('VALIDATION_FAILED', detail, { errors: [{ path: '', message }] });

function parseJsonBody(utf8: TextDecoder, body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw bodyProblem('The request body is not valid UTF-8', 'must be UTF-8');
  }
  if (text.length === 0) throw bodyProblem('The request body is empty; send a JSON object', 'must be a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bodyProblem('The request body is not valid JSON', 'malformed JSON');
  }
  try {
    // A __proto__ or constructor.prototype key is refused outright (prototype poisoning), as Fastify's own parser does.
    if (value !== null && typeof value === 'object') sjson.scan(value, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    throw bodyProblem(
      'The request body has a __proto__ or constructor.prototype key, which is never accepted',
      'must not contain __proto__ or constructor.prototype keys',
    );
  }
  // The text was decoded as strict UTF-8, so a lone surrogate can only come from a \uD800-\uDFFF escape:
  // without one (nearly every body) there is nothing to walk for (1.5-2 µs a quote or transfer body).
  const bad = MAY_ESCAPE_A_SURROGATE.test(text) ? illFormedStrings(value) : [];
  if (bad.length > 0) {
    const errors = bad.slice(0, 20).map((path) => ({ path, message: ILL_FORMED }));
    const more = bad.length > errors.length ? ` (and ${bad.length - errors.length} more)` : '';
    throw new AppError('VALIDATION_FAILED', `Request body failed validation: ${errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}${more}`, {
      errors,
    });
  }
  return value;
}

export const ILL_FORMED = 'must be well-formed Unicode (no lone surrogates)';
/** A \u escape of a UTF-16 surrogate, in either case (an escaped backslash before "u" only makes the walk run). */
const MAY_ESCAPE_A_SURROGATE = /\\u[dD][89a-fA-F]/;

/** JSON pointers of every string (value or key) that is not well-formed UTF-16; iterative, so deep nesting cannot overflow the stack. */
export function illFormedStrings(root: unknown): string[] {
  const out: string[] = [];
  const stack: Array<[unknown, string]> = [[root, '']];
  while (stack.length > 0) {
    const [value, path] = stack.pop() as [unknown, string];
    if (typeof value === 'string') {
      if (!value.isWellFormed()) out.push(path);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`]);
    } else if (value !== null && typeof value === 'object') {
      for (const key of Object.keys(value).reverse()) {
        const pointer = `${path}/${key.toWellFormed().replace(/~/g, '~0').replace(/\//g, '~1')}`;
        if (!key.isWellFormed()) out.push(pointer);
        stack.push([(value as Record<string, unknown>)[key], pointer]);
      }
    }
  }
  return out;
}
