import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AUTH_ERRORS, BODY_ERRORS, type ErrorCodeList, errorResponses, json } from '../../lib/schemas.ts';
import {
  COURIER_STATUS_EXAMPLE,
  CodeInput,
  CourierStatus,
  CourierStatusInput,
  CURRENT_JOB_EXAMPLE,
  CurrentJob,
  FailInput,
  JobParams,
  JobsQuery,
  LocationInput,
  OPEN_JOB_EXAMPLE,
  OpenJob,
  PinInput,
} from './schemas.ts';

const COURIER_AUTH: ErrorCodeList = AUTH_ERRORS;
const JOB_ERRORS: ErrorCodeList = [...BODY_ERRORS, ...COURIER_AUTH, 'TRANSFER_NOT_FOUND', 'TRANSITION_NOT_ALLOWED', 'JOB_LOCKED'];

/** The courier API: its own scope, with its own auth hook (courier tokens only). */
export async function courierRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ courierAuth: [] }];
  const job = (description: string) => json(CurrentJob, description, CURRENT_JOB_EXAMPLE);

  app.get(
    '/courier/status',
    {
      schema: {
        operationId: 'getCourierStatus',
        tags: ['couriers'],
        summary: 'Your status',
        description: 'Whether you are online, your last position and how many jobs you hold.',
        security,
        response: { 200: json(CourierStatus, 'Your status', COURIER_STATUS_EXAMPLE), ...errorResponses(COURIER_AUTH) },
      },
    },
    async (request) => app.services.couriers.status(request.courier.courierId),
  );

  app.put(
    '/courier/status',
    {
      schema: {
        operationId: 'setCourierStatus',
        tags: ['couriers'],
        summary: 'Go online or offline',
        description: 'Online with your position (`lat`, `lng`) to see and accept jobs; offline when your shift ends (jobs you hold stay yours).',
        security,
        body: CourierStatusInput,
        response: { 200: json(CourierStatus, 'Your status', COURIER_STATUS_EXAMPLE), ...errorResponses([...BODY_ERRORS, ...COURIER_AUTH]) },
      },
    },
    async (request) => app.services.couriers.updateStatus(request.courier.courierId, request.body),
  );

  app.post(
    '/courier/location',
    {
      schema: {
        operationId: 'reportCourierLocation',
        tags: ['couriers'],
        summary: 'Report your position',
        description:
          'Keeps your latest position (what recipients see on the tracking page while you carry their parcel). Not an event. At most one position a second is kept: a report sooner than that (for instance right after going online with a position) is accepted and not stored, also with 204, so any sane cadence is never refused. Only a flood, more than 10 reports within one second, gets 429 `RATE_LIMITED` with `Retry-After: 1`.',
        security,
        body: LocationInput,
        response: {
          204: Type.Null({ description: 'Accepted: kept, or dropped when the last kept position is less than a second old' }),
          ...errorResponses([...BODY_ERRORS, ...COURIER_AUTH, 'RATE_LIMITED']),
        },
      },
    },
    async (request, reply) => {
      await app.services.couriers.moveTo(request.courier.courierId, request.body.lat, request.body.lng);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/courier/jobs',
    {
      schema: {
        operationId: 'listOpenJobs',
        tags: ['couriers'],
        summary: 'Open jobs near you',
        description:
          'Paid deliveries waiting for a courier whose pickup is within `radiusKm` (default 5, at most 50) of your position, nearest first (at most 50): where to collect, the destination area, the parcel, and your payout. Nothing about the recipient. Needs you online (409 `COURIER_OFFLINE`).',
        security,
        querystring: JobsQuery,
        response: {
          200: json(Type.Array(OpenJob), 'Open jobs, nearest first', [OPEN_JOB_EXAMPLE]),
          ...errorResponses(['VALIDATION_FAILED', ...COURIER_AUTH, 'COURIER_OFFLINE']),
        },
      },
    },
    async (request) => app.services.couriers.openJobs(request.courier.courierId, request.query.radiusKm),
  );

  app.get(
    '/courier/jobs/current',
    {
      schema: {
        operationId: 'listCurrentJobs',
        tags: ['couriers'],
        summary: 'The jobs you hold',
        description: "Jobs you accepted and have not finished: the exact destination, and the recipient's name and phone until delivery.",
        security,
        response: { 200: json(Type.Array(CurrentJob), 'Your jobs', [CURRENT_JOB_EXAMPLE]), ...errorResponses(COURIER_AUTH) },
      },
    },
    async (request) => app.services.couriers.currentJobs(request.courier.courierId),
  );

  const action = (
    path: string,
    operationId: string,
    summary: string,
    description: string,
    extra: ErrorCodeList,
    body: typeof CodeInput | typeof PinInput | typeof FailInput | undefined,
    run: (courierId: string, transferId: string, body: any) => Promise<unknown>,
  ) =>
    app.post(
      `/courier/jobs/:transferId/${path}`,
      {
        schema: {
          operationId,
          tags: ['couriers'],
          summary,
          description,
          security,
          params: JobParams,
          ...(body ? { body } : {}),
          response: { 200: job('The job after the move'), ...errorResponses([...JOB_ERRORS, ...extra]) },
        },
      },
      async (request) => run(request.courier.courierId, (request.params as { transferId: string }).transferId, request.body),
    );

  action(
    'accept',
    'acceptJob',
    'Accept a job',
    'Takes an open job: exactly one courier wins, the others get 409 `JOB_TAKEN`. You hold at most `MAX_JOBS_PER_COURIER` jobs (409 `TOO_MANY_JOBS`) and must be online (409 `COURIER_OFFLINE`).',
    ['JOB_TAKEN', 'TOO_MANY_JOBS', 'COURIER_OFFLINE'],
    undefined,
    (c, t) => app.services.couriers.accept(c, t),
  );
  action('release', 'releaseJob', 'Give a job back', 'Before pickup: the job is open again for other couriers.', [], undefined, (c, t) =>
    app.services.couriers.release(c, t),
  );
  action(
    'pickup',
    'pickUpJob',
    'Collect the parcel',
    'With the `transferCode` shown at the warehouse. A wrong code is 422 `WRONG_CODE` with `attemptsLeft`; after 5 the job is locked (423 `JOB_LOCKED`) until support unlocks it.',
    ['WRONG_CODE'],
    CodeInput,
    (c, t, b) => app.services.couriers.pickUp(c, t, b.transferCode),
  );
  action(
    'deliver',
    'deliverJob',
    'Hand the parcel over',
    "With the recipient's `deliveryPin`. A wrong PIN is 422 `WRONG_CODE` with `attemptsLeft`; after 5 the job is locked (423).",
    ['WRONG_CODE'],
    PinInput,
    (c, t, b) => app.services.couriers.deliver(c, t, b.deliveryPin),
  );
  action('fail', 'failJob', 'Delivery failed', 'The parcel goes back to the warehouse (state `returning`), with a reason.', [], FailInput, (c, t, b) =>
    app.services.couriers.fail(c, t, b.reason, b.comment),
  );
  action(
    'return',
    'returnJob',
    'Parcel back at the warehouse',
    'With the `transferCode`, after a failed delivery. The merchant is refunded the price less the return fee. Wrong codes count as for pickup.',
    ['WRONG_CODE'],
    CodeInput,
    (c, t, b) => app.services.couriers.returnToWarehouse(c, t, b.transferCode),
  );
}
