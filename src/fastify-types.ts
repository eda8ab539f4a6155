import type { TokenFailures } from './http/rate-limits.ts';
import type { CourierPrincipal, MerchantPrincipal } from './modules/auth/auth-service.ts';
import type { Services } from './services.ts';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** The token endpoint's failed-attempt counters (src/http/rate-limits.ts). */
    tokenFailures: TokenFailures;
  }
  interface FastifyRequest {
    /** The authenticated merchant; set by the auth hook on every merchant route. */
    principal: MerchantPrincipal;
    /** The authenticated courier; set by the auth hook on every courier route. */
    courier: CourierPrincipal;
    /** Set when the request carries an Idempotency-Key that this request now owns. */
    idempotencyKey: string | undefined;
  }
}
