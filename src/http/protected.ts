import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { AppError } from '../lib/errors.ts';
import { sha256, stableStringify } from '../lib/stable-json.ts';

const KEY = /^[\x21-\x7e]{1,255}$/; // printable ASCII, no spaces

/**
 * Hooks for every merchant route: authenticate first (before the body is even parsed), refuse other
 * actors' tokens, then, on POSTs with an Idempotency-Key, replay or claim the key.
 */
export function protect(app: FastifyInstance): void {
  app.decorateRequest('principal', undefined as never);
  app.decorateRequest('idempotencyKey', undefined);

  app.addHook(
    'onRequest',
    authenticating(app, (request, principal) => {
      if (principal.actor !== 'merchant') return wrongActor('merchants', 'a courier');
      request.principal = principal;
    }),
  );

  // The Idempotency-Key hooks only where they can act: on POST routes (route-level hooks, after the
  // scope's own). A GET no longer runs two hooks that returned at once (promises and all, per request).
  const idempotent = (hooks: unknown, hook: unknown) => (hooks === undefined ? [hook] : Array.isArray(hooks) ? [...hooks, hook] : [hooks, hook]);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    route.preHandler = idempotent(route.preHandler, claimKey) as typeof route.preHandler;
    route.onSend = idempotent(route.onSend, recordOutcome) as typeof route.onSend;
  });

  async function claimKey(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== 'POST') return;
    const key = request.headers['idempotency-key'];
    if (key === undefined) return;
    if (typeof key !== 'string' || !KEY.test(key)) {
      throw new AppError('VALIDATION_FAILED', 'Idempotency-Key must be 1 to 255 printable ASCII characters', {
        errors: [{ path: '/headers/idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }],
      });
    }
    // The fingerprint covers what the operation reads: its body only if it takes one (then validation
    // already ran, so the body is bounded and well-formed; key order does not change it). An operation
    // without a request body ignores whatever body came, and walking that unvalidated, possibly very
    // deep JSON would overflow the stack (a 500).
    const body = request.routeOptions.schema?.body ? (request.body ?? null) : null;
    const fingerprint = sha256(`${request.method} ${request.url}\n${stableStringify(body)}`);
    const result = await app.services.idempotency.begin(request.principal.merchantId, key, fingerprint);
    if (result.kind === 'replay') {
      const { status, headers, body } = result.response;
      return reply.code(status).headers(headers).header('idempotent-replayed', 'true').send(body);
    }
    request.idempotencyKey = key;
  }

  // Stores the answer as sent, or releases the key after a 5xx. A write whose service stored its outcome in
  // its own committed transaction or statement (modules/idempotency/outcome.ts) no longer owns the key by
  // now: nothing to do.
  async function recordOutcome(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const key = request.idempotencyKey;
    if (key === undefined) return payload;
    request.idempotencyKey = undefined;
    const merchantId = request.principal.merchantId;
    const failed = reply.statusCode >= 500;
    try {
      if (failed) {
        await app.services.idempotency.release(merchantId, key);
      } else {
        const headers: Record<string, string> = {};
        for (const name of ['content-type', 'location']) {
          const v = reply.getHeader(name);
          if (v !== undefined) headers[name] = String(v);
        }
        await app.services.idempotency.complete(merchantId, key, { status: reply.statusCode, headers, body: String(payload ?? '') });
      }
    } catch (err) {
      // The database failed after the work was done (or undone): still send the true answer. Thrown from
      // here, the error would replace it, and on an error response reach Fastify's default handler (raw
      // error text, application/json). A failed request's key is released once the database is back; a
      // successful one's stays IN_PROGRESS until it counts as abandoned.
      request.log.warn({ err }, 'could not record the Idempotency-Key outcome');
      if (failed) app.services.idempotency.releaseLater(merchantId, key, (e) => request.log.warn({ err: e }, 'gave up releasing the Idempotency-Key'));
    }
    return payload;
  }
}

/** Whoever a valid token speaks for (the auth service's answer). */
type Principal = FastifyRequest['principal'] | FastifyRequest['courier'];

/** Hooks for every courier route (their own scope): a courier's token only. */
export function protectCourier(app: FastifyInstance): void {
  app.decorateRequest('courier', undefined as never);
  app.addHook(
    'onRequest',
    authenticating(app, (request, principal) => {
      if (principal.actor !== 'courier') return wrongActor('couriers', 'a merchant');
      request.courier = principal;
    }),
  );
}

/**
 * The authentication hook: synchronous when the credential's status is in memory (no promise, no
 * microtask hop on nearly every request), else it waits for the lookup. admit returns the error for
 * a principal of the wrong kind.
 */
function authenticating(app: FastifyInstance, admit: (request: FastifyRequest, principal: Principal) => AppError | undefined): onRequestHookHandler {
  return (request, _reply, done) => {
    const principal = app.services.auth.authenticateNow(request.headers.authorization); // a throw is the error answer
    if (principal instanceof Promise) principal.then((p) => done(admit(request, p)), done);
    else done(admit(request, principal));
  };
}

function wrongActor(routesFor: string, tokenOf: string): AppError {
  return new AppError('WRONG_ACTOR', `This endpoint is for ${routesFor}; ${tokenOf} token cannot call it`);
}
