import type { FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.ts';
import { parseMajorAmount, parseSignedMajorAmount } from '../../lib/money.ts';
import type { Person } from '../../modules/accounts/service.ts';
import type { OperatorActor, OperatorRole } from '../../modules/audit/service.ts';

/**
 * The console's roles, as the issue sets them: support (transfers, couriers, merchants read-only),
 * finance (balances, top-ups, tariffs), admin (everything, operators). Every page reads for every
 * operator; each action names the roles that may do it, checked on the server (requirePerson).
 */
export const CAN = {
  read: ['support', 'finance', 'admin'],
  support: ['support', 'admin'],
  finance: ['finance', 'admin'],
  admin: ['admin'],
} as const satisfies Record<string, readonly OperatorRole[]>;

export type Operator = Extract<Person, { kind: 'operator' }>;

export function operatorOf(request: FastifyRequest): Operator {
  const p = request.person;
  if (p?.kind !== 'operator') throw new AppError('FORBIDDEN', 'This page is for operators');
  return p;
}

/** The operator of a request as the audit log names them. */
export function actorOf(request: FastifyRequest): OperatorActor {
  const p = operatorOf(request);
  return { kind: 'operator', id: p.id, name: p.name, role: p.role };
}

/** Whether the operator's role may do an action (to show or hide its form; the route checks again). */
export const may = (request: FastifyRequest, roles: readonly OperatorRole[]): boolean => roles.includes(operatorOf(request).role);

/** A form's amount in major units ("1250" or "1250.50") as minor units; a readable refusal otherwise. */
export function amountField(text: string): number {
  try {
    return parseMajorAmount(text);
  } catch (err) {
    throw new AppError('VALIDATION_FAILED', `The amount ${(err as Error).message.replace(/^amount /, '')}`);
  }
}

/** A form's signed amount ("-12.50" takes money back, "12.50" adds) as minor units; a readable refusal otherwise. */
export function signedAmountField(text: string): number {
  try {
    return parseSignedMajorAmount(text);
  } catch (err) {
    throw new AppError('VALIDATION_FAILED', `The amount ${(err as Error).message.replace(/^amount /, '')}`);
  }
}
