import type { Kysely } from 'kysely';
import type { DB, Db } from '../../db/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { decodeTimeCursor, encodeTimeCursor } from '../../lib/cursor.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type AuditRow, auditRepository } from './repository.ts';

/**
 * The audit log: every operator action, from the console or the CLI, with who, when, what, the
 * reason, and the state before and after. Services that change something for an operator call
 * record() with their open transaction, so the entry commits (or rolls back) with the change itself.
 * There is no update or delete here, and the table's triggers refuse them.
 */

export type OperatorRole = 'support' | 'finance' | 'admin';
export const OPERATOR_ROLES: readonly OperatorRole[] = ['support', 'finance', 'admin'];

/** Who acts: an operator of the console, or the CLI (operator "cli", run by a machine user). */
export type OperatorActor = { kind: 'operator'; id: string; name: string; role: OperatorRole } | { kind: 'cli'; machineUser: string };

/** How an actor is named in the ledger, timelines and the log. */
export function actorLabel(actor: OperatorActor): string {
  return actor.kind === 'cli' ? `cli (${actor.machineUser})` : `${actor.name} (${actor.role})`;
}

/** The id an event row keeps for an operator's change ("cli" for the CLI), so timelines can name the operator. */
export function actorId(actor: OperatorActor): string {
  return actor.kind === 'cli' ? `cli:${actor.machineUser}` : actor.id;
}

export interface AuditInput {
  action: string;
  subjectType: 'transfer' | 'merchant' | 'courier' | 'tariff' | 'operator' | 'webhook_endpoint' | 'credential';
  subjectId?: string | null;
  merchantId?: string | null;
  reason?: string | null;
  before?: unknown;
  after?: unknown;
}

export interface AuditEntry {
  id: string;
  occurredAt: string;
  operator: { id: string | null; name: string; role: string; machineUser: string | null; label: string };
  action: string;
  subjectType: string;
  subjectId: string | null;
  merchantId: string | null;
  reason: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditQuery {
  q?: string;
  action?: string;
  subjectType?: string;
  subjectId?: string;
  operatorId?: string;
  from?: string;
  to?: string;
  cursor?: string;
  limit?: number;
}

/** Reasons are required for every operator action: at least a few characters, one line of at most 500. */
export function checkReason(reason: string | undefined | null): string {
  const r = String(reason ?? '').trim();
  if (r.length < 3) throw new AppError('VALIDATION_FAILED', 'Give a reason (at least 3 characters): it goes into the audit log');
  if (r.length > 500) throw new AppError('VALIDATION_FAILED', 'The reason must be at most 500 characters');
  // Control characters (line breaks, tabs...) become spaces: a reason is one line.
  return [...r].map((c) => (c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127 ? ' ' : c)).join('');
}

export class AuditService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  constructor(db: Kysely<DB>, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  /** Records one action; call it with the transaction that makes the change. */
  async record(db: Db, actor: OperatorActor, input: AuditInput): Promise<void> {
    await auditRepository.insert(db, {
      id: newId(),
      occurred_at: this.#clock.now(),
      operator_id: actor.kind === 'operator' ? actor.id : null,
      operator_name: actor.kind === 'operator' ? actor.name : 'cli',
      operator_role: actor.kind === 'operator' ? actor.role : 'cli',
      machine_user: actor.kind === 'cli' ? actor.machineUser : null,
      action: input.action,
      subject_type: input.subjectType,
      subject_id: input.subjectId ?? null,
      merchant_id: input.merchantId ?? null,
      reason: input.reason ?? null,
      before: input.before === undefined ? null : JSON.stringify(input.before),
      after: input.after === undefined ? null : JSON.stringify(input.after),
    });
  }

  /** Newest first, filtered, a page at a time. */
  async search(query: AuditQuery): Promise<{ items: AuditEntry[]; nextCursor?: string }> {
    const limit = Math.min(Math.max(query.limit ?? 50, 1), 200);
    const time = (v: string | undefined, name: string) => {
      if (!v) return undefined;
      const ms = Date.parse(v);
      if (Number.isNaN(ms)) throw new AppError('VALIDATION_FAILED', `${name} must be a date such as 2026-11-21`);
      return ms;
    };
    const cursor = query.cursor ? decodeTimeCursor(query.cursor) : undefined;
    const rows = await auditRepository.search(this.#db, {
      text: query.q?.trim().slice(0, 200) || undefined,
      action: query.action || undefined,
      subjectType: query.subjectType || undefined,
      subjectId: query.subjectId || undefined,
      operatorId: query.operatorId || undefined,
      from: time(query.from, 'From'),
      to: time(query.to, 'To'),
      before: cursor && { occurredAt: cursor.createdAt, id: cursor.id },
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toEntry),
      ...(rows.length > limit ? { nextCursor: encodeTimeCursor({ created_at: last.occurred_at, id: last.id }) } : {}),
    };
  }

  /** The entries about one subject (a transfer's page), oldest first. */
  async about(subjectType: AuditInput['subjectType'], subjectId: string): Promise<AuditEntry[]> {
    return (await auditRepository.search(this.#db, { subjectType, subjectId, limit: 500 })).reverse().map(toEntry);
  }
}

function toEntry(r: AuditRow): AuditEntry {
  return {
    id: r.id,
    occurredAt: new Date(Number(r.occurred_at)).toISOString(),
    operator: {
      id: r.operator_id,
      name: r.operator_name,
      role: r.operator_role,
      machineUser: r.machine_user,
      label: r.machine_user !== null ? `cli (${r.machine_user})` : `${r.operator_name} (${r.operator_role})`,
    },
    action: r.action,
    subjectType: r.subject_type,
    subjectId: r.subject_id,
    merchantId: r.merchant_id,
    reason: r.reason,
    before: r.before === null ? null : JSON.parse(r.before),
    after: r.after === null ? null : JSON.parse(r.after),
  };
}
