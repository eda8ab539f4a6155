import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import type { CourierStatus, CurrentJob, OpenJob } from '../../../modules/couriers/schemas.ts';
import { DELIVERY_FAILURE_REASONS } from '../../../modules/transfers/lifecycle.ts';
import { field } from '../../forms.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { courierIdOf, requireCourier } from '../courier.ts';
import { type OfferCard, offerCards } from '../offers/routes.ts';

/**
 * Jobs: open ones near the courier (take one), and one job's steps in order: to the pickup (a maps
 * link), the transfer code, to the recipient (name and phone only while the job is theirs), the PIN
 * (attempts left; locked after five, with whom to call), or a failed delivery and the return with the
 * code; release before pickup. Every action is the courier service's, as for the API.
 */

export const FAILURE_REASON_LABELS: Record<(typeof DELIVERY_FAILURE_REASONS)[number], string> = {
  RECIPIENT_UNAVAILABLE: 'Recipient not there, no answer',
  WRONG_ADDRESS: 'Wrong or unknown address',
  RECIPIENT_REFUSED: 'Recipient refused the parcel',
  PARCEL_DAMAGED: 'Parcel damaged',
  OTHER: 'Something else',
};

export interface JobsView {
  title: string;
  status: CourierStatus;
  held: CurrentJob[];
  open: OpenJob[];
  offers: OfferCard[];
}

export interface Step {
  label: string;
  state: 'done' | 'current' | 'todo';
}

export interface JobView {
  title: string;
  job: CurrentJob;
  steps: Step[];
  maps: { pickup: Links; destination: Links };
  reasons: Array<{ value: string; label: string }>;
  supportPhone: string | null;
  /** Which form the error belongs to. */
  errorFor?: 'pickup' | 'deliver' | 'fail' | 'return';
  error?: string;
}

interface Links {
  /** A universal https maps link (opens the phone's maps app). */
  web: string;
  /** A geo: URI (Android's maps apps). */
  geo: string;
}

const mapsLinks = (lat: number, lng: number, label: string): Links => ({
  web: `https://www.google.com/maps/dir/?api=1&destination=${lat},${lng}&travelmode=driving`,
  geo: `geo:${lat},${lng}?q=${lat},${lng}(${encodeURIComponent(label)})`,
});

/** The steps of a job in order, marked by the job's state (going somewhere and entering its code are one stop). */
export function stepsOf(job: CurrentJob): Step[] {
  const failed = job.state === 'returning' || job.state === 'returned';
  const labels = failed
    ? ['Go to the pickup', 'Collect with the transfer code', 'Go to the recipient', 'Delivery failed: back to the warehouse', 'Return with the transfer code']
    : ['Go to the pickup', 'Collect with the transfer code', 'Go to the recipient', 'Hand over with the PIN'];
  const marks: Partial<Record<CurrentJob['state'], Step['state'][]>> = {
    courierAssigned: ['current', 'current', 'todo', 'todo'],
    pickedUp: ['done', 'done', 'current', 'current'],
    delivered: ['done', 'done', 'done', 'done'],
    returning: ['done', 'done', 'done', 'current', 'current'],
    returned: ['done', 'done', 'done', 'done', 'done'],
  };
  const m = marks[job.state];
  return labels.map((label, i) => ({ label, state: m?.[i] ?? 'todo' }));
}

export async function jobsPages(app: FastifyInstance): Promise<void> {
  const couriers = app.services.couriers;
  const supportPhone = app.webConfig.supportPhone ?? null;
  app.addHook('preHandler', requireCourier);

  app.get('/', async (request, reply) => {
    const courierId = courierIdOf(request);
    const status = await couriers.status(courierId);
    const open = status.online ? await couriers.openJobs(courierId) : [];
    const offers = status.online ? await offerCards(request) : [];
    return render<JobsView>(reply, 'courier-app/jobs/list.eta', { title: 'Jobs', status, held: await couriers.currentJobs(courierId), open, offers });
  });

  const jobPage = async (request: FastifyRequest, reply: FastifyReply, extra: Pick<JobView, 'error' | 'errorFor'> = {}, status = 200) => {
    const job = await couriers.job(courierIdOf(request), transferIdOf(request));
    return render<JobView>(
      reply,
      'courier-app/jobs/job.eta',
      {
        title: `Job: ${job.pickup.name}`,
        job,
        steps: stepsOf(job),
        maps: {
          pickup: mapsLinks(job.pickup.location.lat, job.pickup.location.lng, job.pickup.name),
          destination: mapsLinks(job.destination.location.lat, job.destination.location.lng, job.destination.address),
        },
        reasons: DELIVERY_FAILURE_REASONS.map((value) => ({ value, label: FAILURE_REASON_LABELS[value] })),
        supportPhone,
        ...extra,
      },
      status,
    );
  };

  app.get('/:transferId', async (request, reply) => jobPage(request, reply));

  app.post('/:transferId/accept', async (request, reply) => {
    const id = transferIdOf(request);
    try {
      await couriers.accept(courierIdOf(request), id);
    } catch (err) {
      if (err instanceof AppError && ['JOB_TAKEN', 'TOO_MANY_JOBS', 'COURIER_OFFLINE', 'JOB_LOCKED', 'TRANSFER_NOT_FOUND'].includes(err.code)) {
        const text =
          err.code === 'JOB_TAKEN' || err.code === 'TRANSFER_NOT_FOUND' ? 'That job is no longer open: another courier took it, or it ended.' : err.detail;
        return redirectWithFlash(reply, '/courier-app/jobs', text);
      }
      throw err;
    }
    return redirectWithFlash(reply, `/courier-app/jobs/${id}`, 'The job is yours. Go to the pickup.');
  });

  app.post('/:transferId/release', async (request, reply) => {
    const id = transferIdOf(request);
    const done = await move(request, reply, () => couriers.release(courierIdOf(request), id));
    if (done) return done;
    return redirectWithFlash(reply, '/courier-app/jobs', 'You gave the job back: it is open for other couriers again.');
  });

  const codeAction = (
    path: 'pickup' | 'deliver' | 'return',
    name: 'transferCode' | 'deliveryPin',
    run: (c: string, t: string, code: string) => Promise<CurrentJob>,
    flash: string,
  ) =>
    app.post(`/:transferId/${path}`, async (request, reply) => {
      const code = field(request, name, { max: 20 });
      if (code === '')
        return jobPage(
          request,
          reply,
          { errorFor: path, error: name === 'deliveryPin' ? 'Enter the PIN the recipient tells you.' : 'Enter the transfer code.' },
          422,
        );
      try {
        await run(courierIdOf(request), transferIdOf(request), code);
      } catch (err) {
        if (err instanceof AppError && err.code === 'WRONG_CODE') {
          const left = Number((err.options.extra as { attemptsLeft?: number } | undefined)?.attemptsLeft ?? 0);
          const what = name === 'deliveryPin' ? 'That PIN is wrong' : 'That transfer code is wrong';
          return jobPage(request, reply, { errorFor: path, error: `${what}: ${left} attempt${left === 1 ? '' : 's'} left before the job is locked.` }, 422);
        }
        if (err instanceof AppError && err.code === 'JOB_LOCKED') return jobPage(request, reply, {}, 423);
        const done = await refused(request, reply, err);
        if (done) return done;
        throw err;
      }
      return redirectWithFlash(reply, `/courier-app/jobs/${transferIdOf(request)}`, flash);
    });
  codeAction('pickup', 'transferCode', (c, t, code) => couriers.pickUp(c, t, code), 'Collected. Now take it to the recipient.');
  codeAction('deliver', 'deliveryPin', (c, t, code) => couriers.deliver(c, t, code), 'Delivered. Well done!');
  codeAction('return', 'transferCode', (c, t, code) => couriers.returnToWarehouse(c, t, code), 'Returned to the warehouse.');

  app.post('/:transferId/fail', async (request, reply) => {
    const reason = field(request, 'reason', { max: 40 });
    const comment = field(request, 'comment', { max: 500 });
    if (!(DELIVERY_FAILURE_REASONS as readonly string[]).includes(reason)) {
      return jobPage(request, reply, { errorFor: 'fail', error: 'Choose why the delivery failed.' }, 422);
    }
    const done = await move(request, reply, () => couriers.fail(courierIdOf(request), transferIdOf(request), reason, comment || undefined));
    if (done) return done;
    return redirectWithFlash(reply, `/courier-app/jobs/${transferIdOf(request)}`, 'Delivery failed: take the parcel back to the warehouse.');
  });

  /** Runs a move; a refusal a courier can cause (a step already done, locked) answers the job page; undefined when it went through. */
  async function move(request: FastifyRequest, reply: FastifyReply, run: () => Promise<unknown>): Promise<FastifyReply | undefined> {
    try {
      await run();
      return undefined;
    } catch (err) {
      const done = await refused(request, reply, err);
      if (done) return done;
      throw err;
    }
  }

  async function refused(request: FastifyRequest, reply: FastifyReply, err: unknown): Promise<FastifyReply | undefined> {
    if (err instanceof AppError && err.code === 'TRANSITION_NOT_ALLOWED') {
      // E.g. the same form sent twice: the job has moved on already.
      return redirectWithFlash(reply, `/courier-app/jobs/${transferIdOf(request)}`, 'That step is not possible now: here is where the job stands.');
    }
    if (err instanceof AppError && err.code === 'JOB_LOCKED') return jobPage(request, reply, {}, 423);
    if (err instanceof AppError && err.status === 404) throw err;
    const message = errorMessage(err);
    return message ? jobPage(request, reply, { error: message }, (err as AppError).status) : undefined;
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The job id of the path; anything that is not a UUID is a job nobody has (404, like another courier's). */
function transferIdOf(request: FastifyRequest): string {
  const id = String((request.params as { transferId?: string }).transferId ?? '').toLowerCase();
  if (!UUID_RE.test(id)) throw new AppError('TRANSFER_NOT_FOUND', 'No such job');
  return id;
}
