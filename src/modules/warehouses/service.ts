import type { Kysely } from 'kysely';
import { inTransaction, type RecordOutcome } from '../../db/transaction.ts';
import type { DB } from '../../db/types.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { rememberedShapes } from '../../lib/remembered-shapes.ts';
import { storedJson } from '../../lib/stored-json.ts';
import { merchantsRepository } from '../merchants/repository.ts';
import { type WarehouseRow, warehousesRepository } from './repository.ts';
import type { Warehouse, WarehouseInput, WarehouseListQuery } from './schemas.ts';

export interface WarehousePage {
  items: Warehouse[];
  /** Cursor of the next page, when there is one. */
  nextCursor?: string;
}

export class WarehousesService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #maxPerMerchant: number;
  // Reads answer the same rows again and again: their shapes are remembered (~3 KiB each with the row and JSON).
  readonly #shape = rememberedShapes(toWarehouse, 500);
  constructor(db: Kysely<DB>, clock: Clock, maxPerMerchant: number) {
    this.#db = db;
    this.#clock = clock;
    this.#maxPerMerchant = maxPerMerchant;
  }

  async list(merchantId: string, query: WarehouseListQuery): Promise<WarehousePage> {
    const afterId = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    // Without `limit`, every warehouse (the per-merchant cap bounds it); with it, one row more tells whether a next page exists.
    const rows = await warehousesRepository.list(this.#db, merchantId, {
      status: query.status,
      afterId,
      limit: query.limit === undefined ? undefined : query.limit + 1,
    });
    const limit = query.limit ?? rows.length;
    const page = rows.slice(0, limit);
    const more = rows.length > limit;
    return { items: page.map(this.#shape), ...(more ? { nextCursor: encodeCursor(page[page.length - 1].id) } : {}) };
  }

  async get(merchantId: string, id: string): Promise<Warehouse> {
    return this.#shape(await this.require(merchantId, id));
  }

  /** The warehouse row if the merchant owns it; WAREHOUSE_NOT_FOUND otherwise (also for another merchant's id). */
  async require(merchantId: string, id: string): Promise<WarehouseRow> {
    const row = await warehousesRepository.find(this.#db, merchantId, id);
    if (!row) throw new AppError('WAREHOUSE_NOT_FOUND', `No warehouse ${id}`);
    return row;
  }

  async create(merchantId: string, input: WarehouseInput, record?: RecordOutcome<Warehouse>): Promise<Warehouse> {
    return inTransaction(
      this.#db,
      async (trx) => {
        // Serialize a merchant's concurrent creations (PostgreSQL, read committed), or two could both pass the count.
        await merchantsRepository.lock(trx, merchantId);
        if ((await warehousesRepository.count(trx, merchantId)) >= this.#maxPerMerchant) {
          throw new AppError('WAREHOUSE_LIMIT_REACHED', `A merchant can have at most ${this.#maxPerMerchant} warehouses`);
        }
        const now = this.#clock.now();
        const row: WarehouseRow = { id: newId(), merchant_id: merchantId, created_at: now, ...editable(input, now) };
        await warehousesRepository.insert(trx, row);
        return toWarehouse(row);
      },
      record,
    );
  }

  /** Replaces every editable detail: omitted optional fields are cleared, status defaults to ACTIVE. */
  async replace(merchantId: string, id: string, input: WarehouseInput): Promise<Warehouse> {
    const row = await warehousesRepository.update(this.#db, merchantId, id, editable(input, this.#clock.now()));
    if (!row) throw new AppError('WAREHOUSE_NOT_FOUND', `No warehouse ${id}`);
    return toWarehouse(row);
  }
}

function editable(input: WarehouseInput, now: number): Omit<WarehouseRow, 'id' | 'merchant_id' | 'created_at'> {
  return {
    name: input.name,
    name_int: input.nameInt ?? null,
    status: input.status ?? 'ACTIVE',
    address: input.address,
    contact_phone: input.contactPhone ?? null,
    contact_email: input.contactEmail ?? null,
    location_metadata: JSON.stringify(input.locationMetadata),
    lat: input.locationMetadata.lat,
    lng: input.locationMetadata.lng,
    updated_at: now,
  };
}

export function toWarehouse(row: WarehouseRow): Warehouse {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    commersantId: row.merchant_id,
    name: row.name,
    nameInt: row.name_int,
    status: row.status,
    address: row.address,
    contactPhone: row.contact_phone,
    contactEmail: row.contact_email,
    locationMetadata: storedJson(row.location_metadata),
    location: { type: 'Point', coordinates: [row.lng, row.lat] },
    type: 'POINT',
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const encodeCursor = (id: string): string => Buffer.from(id, 'utf8').toString('base64url');
function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!UUID.test(id)) {
    throw new AppError('VALIDATION_FAILED', 'cursor is not one this service issued', { errors: [{ path: '/cursor', message: 'is not a valid cursor' }] });
  }
  return id;
}
