import type { FastifyInstance } from 'fastify';
import type { FinishedJob } from '../../../modules/couriers/service.ts';
import { render } from '../../render.ts';
import { courierIdOf, money, requireCourier } from '../courier.ts';

/** Today: the jobs the courier finished since midnight UTC and the sum of their payouts. */

export interface TodayView {
  title: string;
  day: string;
  jobs: Array<FinishedJob & { payoutText: string }>;
  delivered: number;
  returned: number;
  total: string;
}

export async function todayPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requireCourier);
  app.get('/', async (request, reply) => {
    // The day is the UTC day (one rule for every courier and instance; documented in the README).
    const { day, jobs, earnedMinor, currency } = await app.services.couriers.today(courierIdOf(request));
    return render<TodayView>(reply, 'courier-app/today/today.eta', {
      title: 'Today',
      day,
      jobs: jobs.map((j) => ({ ...j, payoutText: money(j.payoutMinor, j.currency) })),
      delivered: jobs.filter((j) => j.state === 'delivered').length,
      returned: jobs.filter((j) => j.state === 'returned').length,
      total: money(earnedMinor, currency),
    });
  });
}
