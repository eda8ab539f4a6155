import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.ts';
import { formatMinor } from '../../lib/money.ts';
import { clearSessionCookie } from '../plugin.ts';
import { redirectWithFlash } from '../render.ts';
import { requirePerson } from '../session.ts';

/** What the courier app's pages share: who the courier is, and money as shown. */

const requireCourierPerson = requirePerson('courier');

/**
 * preHandler of every page behind the login: a courier's session (others: login or 403), and a courier
 * account that is still ACTIVE (a disabled courier's session ends, as its API tokens stop working).
 */
export async function requireCourier(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  await requireCourierPerson(request, reply);
  if (reply.sent || request.person?.kind !== 'courier') return;
  if (!(await request.server.services.couriers.isActive(request.person.courierId))) {
    if (request.webSession) await request.server.services.accounts.endSession(request.webSession.cookie);
    clearSessionCookie(reply);
    await redirectWithFlash(reply, '/courier-app/login', 'Your courier account is disabled: call your dispatcher.');
  }
}

/** The courier id of a request that went through requireCourier. */
export function courierIdOf(request: FastifyRequest): string {
  const p = request.person;
  if (p?.kind !== 'courier') throw new AppError('FORBIDDEN', 'This page is for couriers');
  return p.courierId;
}

/** "1 250.00 RUB" from minor units. */
export const money = (minor: number, currency: string | null): string => `${formatMinor(minor)}${currency ? ` ${currency}` : ''}`;
/** A payout given in major units (the courier API's number). */
export const majorMoney = (major: number, currency: string): string => `${major.toFixed(2)} ${currency}`;
