import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AUTH_ERRORS, BODY_ERRORS, type ErrorCodeList, errorResponses, json } from '../../lib/schemas.ts';
import { CURRENT_JOB_EXAMPLE, CurrentJob } from '../couriers/schemas.ts';
import { OFFER_EXAMPLE, Offer, OfferParams } from './schemas.ts';
import { streamOffers } from './stream.ts';

/** Offers to the courier (its own scope and auth hook, registered beside the courier routes). */
export async function offerRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ courierAuth: [] }];
  const AUTH: ErrorCodeList = AUTH_ERRORS;
  // Open streams end when the server starts closing: they never go idle, so they would hold the close up.
  const streams = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of streams) end();
  });

  app.get(
    '/courier/offers',
    {
      schema: {
        operationId: 'listOffers',
        tags: ['couriers'],
        summary: 'Jobs offered to you',
        description:
          'Open offers: a paid delivery offered to you alone until `expiresAt` (`OFFER_TTL_SECONDS`, default 30), then to the next courier. The job as the job list shows it, plus `distanceMeters` from your position and `estimatedPickupAt`. Accept or decline each; an offer you let expire counts as a miss, and `OFFER_MISSES_BEFORE_OFFLINE` (default 3) misses in a row set you offline.',
        security,
        response: { 200: json(Type.Array(Offer), 'Your open offers, oldest first', [OFFER_EXAMPLE]), ...errorResponses(AUTH) },
      },
    },
    async (request) => app.services.dispatch.listOffers(request.courier.courierId),
  );

  app.get(
    '/courier/offers/stream',
    {
      schema: {
        operationId: 'streamOffers',
        tags: ['couriers'],
        summary: 'Offers as they are made (server-sent events)',
        description:
          'A `text/event-stream`: first your open offers, then every new one within a second of being made, whichever instance you are connected to. Each is an `offer` event whose `id` is the offer id and whose `data` is the offer (as in `GET /courier/offers`). A comment line every 15 s keeps the connection alive; reconnect when it drops (offers made meanwhile come first).',
        security,
        response: {
          200: {
            description: 'The event stream',
            content: {
              'text/event-stream': {
                schema: { type: 'string' },
                example: `event: offer\nid: ${OFFER_EXAMPLE.id}\ndata: ${JSON.stringify(OFFER_EXAMPLE)}\n\n`,
              },
            },
          },
          ...errorResponses(AUTH),
        },
      },
    },
    async (request, reply) =>
      streamOffers(request, reply, { dispatch: app.services.dispatch, courierId: request.courier.courierId, data: (offer) => offer, streams }),
  );

  app.post(
    '/courier/offers/:offerId/accept',
    {
      schema: {
        operationId: 'acceptOffer',
        tags: ['couriers'],
        summary: 'Accept an offer',
        description:
          'Takes the offered job: the transfer becomes `courierAssigned` to you, and the answer is the job (as `GET /courier/jobs/current` shows it). 409 `OFFER_EXPIRED` after `expiresAt`, and also when the offer lost a race (the job was taken from the job list, assigned or cancelled); accepting an offer you already won answers the job again. The job cap and being online apply as for the job list (409 `TOO_MANY_JOBS`, `COURIER_OFFLINE`).',
        security,
        params: OfferParams,
        response: {
          200: json(CurrentJob, 'The job, now yours', CURRENT_JOB_EXAMPLE),
          ...errorResponses([...BODY_ERRORS, ...AUTH, 'OFFER_NOT_FOUND', 'OFFER_EXPIRED', 'TOO_MANY_JOBS', 'COURIER_OFFLINE', 'JOB_LOCKED']),
        },
      },
    },
    async (request) => app.services.dispatch.accept(request.courier.courierId, request.params.offerId),
  );

  app.post(
    '/courier/offers/:offerId/decline',
    {
      schema: {
        operationId: 'declineOffer',
        tags: ['couriers'],
        summary: 'Decline an offer',
        description:
          'The job goes to the next courier at once and is never offered to you again. Not a miss. 409 `OFFER_EXPIRED` when the offer is no longer open.',
        security,
        params: OfferParams,
        response: {
          200: json(Offer, 'The offer, now declined', { ...OFFER_EXAMPLE, status: 'declined' }),
          ...errorResponses([...BODY_ERRORS, ...AUTH, 'OFFER_NOT_FOUND', 'OFFER_EXPIRED']),
        },
      },
    },
    async (request) => app.services.dispatch.decline(request.courier.courierId, request.params.offerId),
  );
}
