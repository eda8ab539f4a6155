import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { inTransaction } from '../../db/transaction.ts';
import type { DB, TransferState } from '../../db/types.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { hashSecret } from '../../lib/credential-hash.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { minorToNumber } from '../../lib/money.ts';
import { PHONE, SINGLE_LINE } from '../../lib/schemas.ts';
import { type AuditService, checkReason, type OperatorActor } from '../audit/service.ts';
import { distanceMetres } from '../tariffs/pricing.ts';
import { nextStates } from '../transfers/lifecycle.ts';
import { type TransferRow, transfersRepository } from '../transfers/repository.ts';
import type { Transfer } from '../transfers/schemas.ts';
import type { TransfersService } from '../transfers/service.ts';
import { jobsRepository } from './jobs-repository.ts';
import { COURIER_CLIENT_PREFIX, type CourierRow, couriersRepository } from './repository.ts';
import type { CourierStatus, CourierStatusInput, CurrentJob, OpenJob } from './schemas.ts';

/** Wrong transferCode / deliveryPin entries a job tolerates; the next locks it until an operator unlocks it. */
export const MAX_CODE_ATTEMPTS = 5;
/** Positions are kept at most once a second per courier (the tracking page needs no more); sooner ones are accepted and dropped. */
export const LOCATION_MIN_INTERVAL_MS = 1000;
/** More reports than this within one second (per courier, per instance) is a flood, not a cadence: 429. */
export const LOCATION_FLOOD_PER_SECOND = 10;
const OPEN_JOBS_LIMIT = 50;
// The API's own text rules, so the CLI refuses what the API would.
const SINGLE_LINE_RE = new RegExp(SINGLE_LINE, 'u');
const PHONE_RE = new RegExp(PHONE);

/** A delivered or returned job, as the courier's day lists it. */
export interface FinishedJob {
  transferId: string;
  state: 'delivered' | 'returned';
  finishedAt: string;
  pickupName: string;
  destinationAddress: string;
  /** What it earned: the payout when delivered, 0 when returned. */
  payoutMinor: number;
  payout: number;
  currency: string;
}

export interface CourierView {
  id: string;
  name: string;
  phone: string;
  clientId: string;
  status: 'ACTIVE' | 'DISABLED';
  online: boolean;
  createdAt: string;
}

/** Details frozen on the transfer (transfers.details) that the courier side reads. */
interface Details {
  description: string;
  pickupAddress: string;
  destinationAddress: string;
  destinationLocation: { coordinates: [number, number] };
  destinationAddressMetadata: { city?: string };
  parcelSize: OpenJob['parcelSize'];
  isFragile: boolean;
  isPerishable: boolean;
  recipientFullName: string;
  recipientInfo: { phone: string };
  senderInfo: { warehouseName: string; phone: string | null };
}

/**
 * Couriers: accounts (operators), status and position, and their jobs. Every job query is scoped to
 * the courier: open live jobs to look at and accept, otherwise only the jobs it holds. Moves go
 * through TransfersService.transition, like everyone's.
 */
export class CouriersService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #transfers: TransfersService;
  readonly #maxJobs: number;
  readonly #onCredentialChange: (clientId: string) => void;
  readonly #audit: AuditService;
  constructor(opts: {
    db: Kysely<DB>;
    clock: Clock;
    transfers: TransfersService;
    maxJobsPerCourier: number;
    onCredentialChange: (clientId: string) => void;
    audit: AuditService;
  }) {
    this.#db = opts.db;
    this.#audit = opts.audit;
    this.#clock = opts.clock;
    this.#transfers = opts.transfers;
    this.#maxJobs = opts.maxJobsPerCourier;
    this.#onCredentialChange = opts.onCredentialChange;
  }

  // --- Operators -------------------------------------------------------------------------------

  /** A courier account with its client credentials; the secret is returned only here. */
  async create(name: string, phone: string, by?: OperatorActor): Promise<{ courier: CourierView; clientId: string; clientSecret: string }> {
    const trimmed = name.trim();
    if (trimmed === '' || trimmed.length > 100 || !SINGLE_LINE_RE.test(trimmed)) {
      throw new AppError('VALIDATION_FAILED', 'Courier name must be 1 to 100 characters without control characters');
    }
    if (!PHONE_RE.test(phone.trim())) throw new AppError('VALIDATION_FAILED', 'Courier phone must be digits with optional +, spaces, dashes, parentheses');
    const now = this.#clock.now();
    const clientId = `${COURIER_CLIENT_PREFIX}${randomBytes(12).toString('hex')}`;
    const clientSecret = `sk_${randomBytes(32).toString('base64url')}`;
    const row: CourierRow = {
      id: newId(),
      name: trimmed,
      phone: phone.trim(),
      client_id: clientId,
      secret_hash: hashSecret(clientSecret),
      status: 'ACTIVE',
      online: 0,
      lat: null,
      lng: null,
      location_at: null,
      created_at: now,
      updated_at: now,
    };
    await inTransaction(this.#db, async (trx) => {
      await couriersRepository.insert(trx, row);
      if (by)
        await this.#audit.record(trx, by, {
          action: 'courier.create',
          subjectType: 'courier',
          subjectId: row.id,
          after: { name: row.name, phone: row.phone, clientId },
        });
    });
    return { courier: view(row), clientId, clientSecret };
  }

  async list(): Promise<CourierView[]> {
    return (await couriersRepository.list(this.#db)).map(view);
  }

  /** DISABLED couriers' tokens fail like revoked credentials (CREDENTIALS_REVOKED); their jobs stay as they are. */
  async setStatus(id: string, status: 'ACTIVE' | 'DISABLED', by?: OperatorActor, reason?: string): Promise<CourierView> {
    const why = reason === undefined ? null : checkReason(reason);
    const row = await inTransaction(this.#db, async (trx) => {
      const before = await couriersRepository.find(trx, id);
      if (!before) throw new AppError('COURIER_NOT_FOUND', `No courier ${id}`);
      const after = await couriersRepository.update(trx, id, { status, ...(status === 'DISABLED' ? { online: 0 } : {}), updated_at: this.#clock.now() });
      if (!after) throw new AppError('COURIER_NOT_FOUND', `No courier ${id}`);
      if (by)
        await this.#audit.record(trx, by, {
          action: status === 'DISABLED' ? 'courier.disable' : 'courier.enable',
          subjectType: 'courier',
          subjectId: id,
          reason: why,
          before: { status: before.status, online: before.online === 1 },
          after: { status: after.status, online: after.online === 1 },
        });
      return after;
    });
    this.#onCredentialChange(row.client_id);
    return view(row);
  }

  /**
   * The fleet as operators see it: every courier with its last position and current jobs, and the live
   * jobs still waiting for a courier (at most 500 of each).
   */
  async fleet(): Promise<{
    couriers: Array<CourierView & { position: { lat: number; lng: number; at: string } | null; jobs: Array<{ transferId: string; state: TransferState }> }>;
    openJobs: Array<{ transferId: string; pickup: { lat: number; lng: number }; createdAt: string }>;
  }> {
    const [rows, active, open] = await Promise.all([
      couriersRepository.list(this.#db),
      jobsRepository.allActiveJobs(this.#db, 500),
      jobsRepository.openJobs(this.#db, 500),
    ]);
    const jobs = new Map<string, Array<{ transferId: string; state: TransferState }>>();
    for (const t of active) {
      const list = jobs.get(t.courier_id!) ?? [];
      list.push({ transferId: t.id, state: t.state });
      jobs.set(t.courier_id!, list);
    }
    return {
      couriers: rows.map((r) => ({
        ...view(r),
        position: r.lat !== null && r.lng !== null && r.location_at !== null ? { lat: r.lat, lng: r.lng, at: iso(r.location_at) } : null,
        jobs: jobs.get(r.id) ?? [],
      })),
      openJobs: open.map((t) => ({ transferId: t.id, pickup: { lat: t.pickup_lat, lng: t.pickup_lng }, createdAt: iso(t.created_at) })),
    };
  }

  /** Whether a job is locked after too many wrong codes (the console's unlock button). */
  async lockStateOf(transferId: string): Promise<{ locked: boolean; codeAttempts: number }> {
    const r = await jobsRepository.lockState(this.#db, transferId);
    return { locked: r?.locked === 1, codeAttempts: r?.code_attempts ?? 0 };
  }

  /** Clears a job's wrong-code count and lock (audited). */
  async unlock(transferId: string, by?: OperatorActor, reason?: string): Promise<void> {
    const why = reason === undefined ? null : checkReason(reason);
    await inTransaction(this.#db, async (trx) => {
      const before = await jobsRepository.lockState(trx, transferId);
      if (!before || !(await jobsRepository.unlock(trx, transferId, this.#clock.now()))) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${transferId}`);
      if (by)
        await this.#audit.record(trx, by, {
          action: 'transfer.unlock',
          subjectType: 'transfer',
          subjectId: transferId,
          merchantId: before.merchant_id,
          reason: why,
          before: { codeAttempts: before.code_attempts, locked: before.locked === 1 },
          after: { codeAttempts: 0, locked: false },
        });
    });
  }

  // --- The courier itself -------------------------------------------------------------------------

  async status(courierId: string): Promise<CourierStatus> {
    const c = await this.#courier(courierId);
    const active = await jobsRepository.activeJobs(this.#db, courierId);
    return {
      id: c.id,
      firstName: firstName(c.name),
      online: c.online === 1,
      location: c.lat !== null && c.lng !== null && c.location_at !== null ? { lat: c.lat, lng: c.lng, updatedAt: iso(c.location_at) } : null,
      activeJobs: active.length,
      maxJobs: this.#maxJobs,
    };
  }

  async updateStatus(courierId: string, input: CourierStatusInput): Promise<CourierStatus> {
    if (input.online && (input.lat === undefined || input.lng === undefined)) {
      throw new AppError('VALIDATION_FAILED', 'Going online needs your position: lat and lng', {
        errors: [
          ...(input.lat === undefined ? [{ path: '/lat', message: 'is required when online is true' }] : []),
          ...(input.lng === undefined ? [{ path: '/lng', message: 'is required when online is true' }] : []),
        ],
      });
    }
    const now = this.#clock.now();
    const position = input.lat !== undefined && input.lng !== undefined ? { lat: input.lat, lng: input.lng, location_at: now } : {};
    await couriersRepository.update(this.#db, courierId, { online: input.online ? 1 : 0, ...position, updated_at: now });
    return this.status(courierId);
  }

  /**
   * The latest position (for jobs nearby and the tracking page); not an event. At most one per second
   * is kept: a report sooner than that (e.g. right after going online with a position) is accepted and
   * dropped, so a courier app on any sane cadence is never refused. Only a flood (more than
   * LOCATION_FLOOD_PER_SECOND reports in one second) is a 429. True when the position was stored.
   */
  async moveTo(courierId: string, lat: number, lng: number): Promise<boolean> {
    const now = this.#clock.now();
    if (this.#flooding(courierId, now)) {
      throw new AppError('RATE_LIMITED', `Send your position at most ${LOCATION_FLOOD_PER_SECOND} times a second (one a second is kept)`, {
        headers: { 'retry-after': '1' },
      });
    }
    const kept = await couriersRepository.moveTo(this.#db, courierId, lat, lng, now, LOCATION_MIN_INTERVAL_MS);
    // The jobs it holds get estimates from where it now is.
    if (kept) await this.#transfers.refreshEstimates(courierId, { lat, lng });
    return kept;
  }

  /** Reports per courier in the current one-second window (in memory, per instance; stale windows are pruned). */
  readonly #reports = new Map<string, { second: number; count: number }>();
  #flooding(courierId: string, now: number): boolean {
    const second = Math.floor(now / 1000);
    if (this.#reports.size > 10_000) for (const [id, w] of this.#reports) if (w.second < second) this.#reports.delete(id);
    const w = this.#reports.get(courierId);
    if (!w || w.second !== second) {
      this.#reports.set(courierId, { second, count: 1 });
      return false;
    }
    w.count++;
    return w.count > LOCATION_FLOOD_PER_SECOND;
  }

  /** Open live jobs within radiusKm of the courier, nearest first. */
  async openJobs(courierId: string, radiusKm = 5): Promise<OpenJob[]> {
    const here = await this.#onlineAt(courierId);
    const lngScale = Math.max(0.01, Math.cos((here.lat * Math.PI) / 180));
    const dLat = radiusKm / 111.2;
    const dLng = radiusKm / (111.2 * lngScale);
    const rows = await jobsRepository.openJobsNear(
      this.#db,
      { lat: here.lat, lng: here.lng, lngScale },
      { minLat: here.lat - dLat, maxLat: here.lat + dLat, minLng: here.lng - dLng, maxLng: here.lng + dLng },
      OPEN_JOBS_LIMIT * 2,
    );
    return rows
      .map((r) => ({ row: r, metres: distanceMetres(here, { lat: r.pickup_lat, lng: r.pickup_lng }) }))
      .filter((x) => x.metres <= radiusKm * 1000)
      .sort((a, b) => a.metres - b.metres)
      .slice(0, OPEN_JOBS_LIMIT)
      .map((x) => openJob(x.row, x.metres));
  }

  async currentJobs(courierId: string): Promise<CurrentJob[]> {
    const here = await this.#courier(courierId);
    return (await jobsRepository.activeJobs(this.#db, courierId)).map((r) => currentJob(r, here));
  }

  /**
   * Exactly one courier wins a job; the others get 409 JOB_TAKEN (which says no more than that). Accepting
   * a job you already hold answers it again (a retry after a timeout is not an error). A courier holds at
   * most MAX_JOBS_PER_COURIER jobs.
   */
  async accept(
    courierId: string,
    transferId: string,
    /** Dispatch: a check of its own first in the same transaction (the offer still open, decided in the same commit). */
    opts: { within?: (trx: Transaction<DB>, row: TransferRow) => Promise<void> } = {},
  ): Promise<CurrentJob> {
    const me = await this.#onlineAt(courierId);
    const held = await transfersRepository.findAny(this.#db, transferId);
    if (held?.mode === 'live' && held.courier_id === courierId && held.state === 'courierAssigned') return currentJob(held, me);
    await this.#move(courierId, transferId, 'courierAssigned', {
      guard: async (trx, row) => {
        if (row.mode !== 'live') throw notFound(transferId); // sandbox transfers are never offered to couriers
        await opts.within?.(trx, row);
        if (row.state !== 'inProgress') throw new AppError('JOB_TAKEN', `Transfer ${transferId} is no longer open: another courier took it, or it ended`);
        if (row.locked === 1) throw locked(transferId);
        // One courier's concurrent accepts take turns on its row, so the cap holds.
        await couriersRepository.lock(trx, courierId);
        const held = (await jobsRepository.activeJobs(trx, courierId)).length;
        if (held >= this.#maxJobs) {
          throw new AppError(
            'TOO_MANY_JOBS',
            `A courier can hold at most ${this.#maxJobs} active job${this.#maxJobs === 1 ? '' : 's'}; deliver or release one first`,
          );
        }
      },
      firstName: firstName(me.name),
    });
    return this.#job(courierId, transferId);
  }

  async release(courierId: string, transferId: string): Promise<CurrentJob> {
    const t = await this.#move(courierId, transferId, 'inProgress', {});
    return this.#jobView(t, courierId);
  }

  async pickUp(courierId: string, transferId: string, transferCode: string): Promise<CurrentJob> {
    await this.#checkCode(courierId, transferId, 'pickedUp', 'transferCode', normalizeTransferCode(transferCode));
    await this.#move(courierId, transferId, 'pickedUp', {});
    return this.#job(courierId, transferId);
  }

  async deliver(courierId: string, transferId: string, deliveryPin: string): Promise<CurrentJob> {
    await this.#checkCode(courierId, transferId, 'delivered', 'deliveryPin', deliveryPin.trim());
    const t = await this.#move(courierId, transferId, 'delivered', {});
    return this.#jobView(t, courierId);
  }

  async fail(courierId: string, transferId: string, reason: string, comment?: string): Promise<CurrentJob> {
    await this.#move(courierId, transferId, 'returning', { reason, comment });
    return this.#job(courierId, transferId);
  }

  async returnToWarehouse(courierId: string, transferId: string, transferCode: string): Promise<CurrentJob> {
    await this.#checkCode(courierId, transferId, 'returned', 'transferCode', normalizeTransferCode(transferCode));
    const t = await this.#move(courierId, transferId, 'returned', {});
    return this.#jobView(t, courierId);
  }

  /** One job the courier holds or held (any state while it is theirs); TRANSFER_NOT_FOUND for anyone else's, like a random id. */
  async job(courierId: string, transferId: string): Promise<CurrentJob> {
    return this.#job(courierId, transferId);
  }

  /** The service's clock (the courier app counts offers down against it, not the phone's). */
  now(): number {
    return this.#clock.now();
  }

  /** Whether the courier account may work (DISABLED couriers are refused by the courier app as by the API). */
  async isActive(courierId: string): Promise<boolean> {
    return (await couriersRepository.find(this.#db, courierId))?.status === 'ACTIVE';
  }

  /** The courier's day so far (the UTC day of the service clock): finished jobs and earnings. */
  async today(courierId: string): Promise<{ day: string; jobs: FinishedJob[]; earnedMinor: number; currency: string | null }> {
    const now = this.#clock.now();
    const since = now - (now % 86_400_000);
    return { day: iso(since).slice(0, 10), ...(await this.finishedSince(courierId, since)) };
  }

  /**
   * The jobs the courier finished (delivered or returned) since `since`, newest first, and what they
   * earned: a delivery pays the job's payout; a return pays nothing (the parcel did not arrive).
   */
  async finishedSince(courierId: string, since: number): Promise<{ jobs: FinishedJob[]; earnedMinor: number; currency: string | null }> {
    const rows = await jobsRepository.finishedSince(this.#db, courierId, since);
    const jobs = rows.map((r): FinishedJob => {
      const d = JSON.parse(r.details) as Details;
      const earned = r.state === 'delivered' ? Number(r.courier_payout) : 0;
      return {
        transferId: r.id,
        state: r.state as FinishedJob['state'],
        finishedAt: iso(Number(r.updated_at)),
        pickupName: d.senderInfo.warehouseName,
        destinationAddress: d.destinationAddress,
        payoutMinor: earned,
        payout: minorToNumber(earned),
        currency: r.currency,
      };
    });
    return { jobs, earnedMinor: jobs.reduce((sum, j) => sum + j.payoutMinor, 0), currency: rows[0]?.currency ?? null };
  }

  // --- Internals ---------------------------------------------------------------------------------

  /** A courier's move on a job it holds (or, to accept, an open one): scope and lock are checked in the transaction. */
  async #move(
    courierId: string,
    transferId: string,
    to: TransferState,
    opts: { reason?: string; comment?: string; firstName?: string; guard?: (trx: Transaction<DB>, row: TransferRow) => Promise<void> },
  ): Promise<Transfer> {
    const t = await this.#transfers.transition(transferId, {
      to,
      actor: { type: 'courier', courier: { id: courierId, firstName: opts.firstName ?? '' } },
      reason: opts.reason,
      comment: opts.comment,
      guard:
        opts.guard ??
        (async (_trx, row) => {
          if (row.mode !== 'live' || row.courier_id !== courierId) throw notFound(transferId);
          if (row.locked === 1) throw locked(transferId);
        }),
    });
    return t as Transfer;
  }

  /**
   * A wrong code counts against the job (committed on its own, so a refusal still counts); the fifth
   * locks it. Checked only when the move is possible, so a code sent at the wrong moment costs nothing.
   */
  async #checkCode(courierId: string, transferId: string, to: TransferState, kind: 'transferCode' | 'deliveryPin', presented: string): Promise<void> {
    const row = await transfersRepository.findAny(this.#db, transferId);
    if (row?.mode !== 'live' || row.courier_id !== courierId) throw notFound(transferId);
    if (row.locked === 1) throw locked(transferId);
    if (!nextStates(row.state, ['courier']).includes(to)) {
      const allowed = nextStates(row.state, ['courier']);
      throw new AppError('TRANSITION_NOT_ALLOWED', `Transfer ${transferId} is ${row.state}; from there it can move to: ${allowed.join(', ') || 'nothing'}`, {
        extra: { state: row.state, allowed },
      });
    }
    const expected = kind === 'transferCode' ? row.transfer_code : row.delivery_pin;
    if (constantTimeEquals(presented, expected)) return;
    const { attempts, locked: nowLocked } = await jobsRepository.recordWrongCode(this.#db, transferId, MAX_CODE_ATTEMPTS, this.#clock.now());
    if (nowLocked) throw locked(transferId);
    const left = MAX_CODE_ATTEMPTS - attempts;
    throw new AppError('WRONG_CODE', `The ${kind} is wrong; ${left} attempt${left === 1 ? '' : 's'} left before the job is locked`, {
      extra: { attemptsLeft: left },
    });
  }

  async #job(courierId: string, transferId: string): Promise<CurrentJob> {
    const row = await transfersRepository.findAny(this.#db, transferId);
    if (!row || row.courier_id !== courierId) throw notFound(transferId);
    return currentJob(row, await this.#courier(courierId));
  }

  /** After a move that ends the courier's hold (release, delivery, return): the job as it was left. */
  async #jobView(_t: Transfer, courierId: string): Promise<CurrentJob> {
    const row = await transfersRepository.findAny(this.#db, _t.id);
    if (!row) throw notFound(_t.id);
    return currentJob(row, await this.#courier(courierId));
  }

  async #courier(courierId: string): Promise<CourierRow> {
    const c = await couriersRepository.find(this.#db, courierId);
    if (!c) throw new AppError('COURIER_NOT_FOUND', `No courier ${courierId}`);
    return c;
  }

  async #onlineAt(courierId: string): Promise<CourierRow & { lat: number; lng: number }> {
    const c = await this.#courier(courierId);
    if (c.online !== 1 || c.lat === null || c.lng === null) {
      throw new AppError('COURIER_OFFLINE', 'Go online with PUT /courier/status (with your position) to see and accept jobs');
    }
    return c as CourierRow & { lat: number; lng: number };
  }
}

const notFound = (id: string) => new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
const locked = (id: string) => new AppError('JOB_LOCKED', `Transfer ${id} is locked after ${MAX_CODE_ATTEMPTS} wrong codes; call support to unlock it`);

export const firstName = (name: string): string => name.trim().split(/\s+/)[0];

/** "k7q2 m9xd" or "K7Q2M9XD" -> "K7Q2-M9XD". */
function normalizeTransferCode(code: string): string {
  const compact = code.toUpperCase().replace(/[\s-]/g, '');
  return compact.length === 8 ? `${compact.slice(0, 4)}-${compact.slice(4)}` : compact;
}

function constantTimeEquals(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

const round1 = (metres: number) => Math.round(metres / 100) / 10;

/** A transfer as the job list shows it (dispatch's offers show the same). */
export function openJob(row: TransferRow, metresToPickup: number): OpenJob {
  const d = JSON.parse(row.details) as Details;
  const [lng, lat] = d.destinationLocation.coordinates;
  return {
    transferId: row.id,
    pickup: {
      name: d.senderInfo.warehouseName,
      address: d.pickupAddress,
      location: { lat: row.pickup_lat, lng: row.pickup_lng },
      contactPhone: d.senderInfo.phone,
    },
    destination: {
      city: d.destinationAddressMetadata.city ?? null,
      approximateLocation: { lat: Math.round(lat * 100) / 100, lng: Math.round(lng * 100) / 100 },
    },
    distanceToPickupKm: round1(metresToPickup),
    deliveryDistanceKm: round1(distanceMetres({ lat: row.pickup_lat, lng: row.pickup_lng }, { lat, lng })),
    parcelSize: d.parcelSize,
    isFragile: d.isFragile,
    isPerishable: d.isPerishable,
    payout: minorToNumber(row.courier_payout),
    currency: row.currency,
    createdAt: iso(row.created_at),
  };
}

function currentJob(row: TransferRow, courier: CourierRow): CurrentJob {
  const d = JSON.parse(row.details) as Details;
  const [lng, lat] = d.destinationLocation.coordinates;
  const here = courier.lat !== null && courier.lng !== null ? { lat: courier.lat, lng: courier.lng } : { lat: row.pickup_lat, lng: row.pickup_lng };
  const open = openJob(row, distanceMetres(here, { lat: row.pickup_lat, lng: row.pickup_lng }));
  const withRecipient = row.state === 'courierAssigned' || row.state === 'pickedUp';
  return {
    ...open,
    state: row.state,
    destination: { city: open.destination.city, address: d.destinationAddress, location: { lat, lng } },
    ...(withRecipient ? { recipient: { name: d.recipientFullName, phone: d.recipientInfo.phone } } : {}),
    description: d.description,
    codeAttemptsLeft: Math.max(0, MAX_CODE_ATTEMPTS - row.code_attempts),
    locked: row.locked === 1,
  };
}

function view(r: CourierRow): CourierView {
  return { id: r.id, name: r.name, phone: r.phone, clientId: r.client_id, status: r.status, online: r.online === 1, createdAt: iso(r.created_at) };
}
