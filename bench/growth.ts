// `npm run bench -- --growth`: before the server starts, fill the (migrated, empty) store with 10^4
// merchants (one warehouse each), 10^6 consumed quotes, 10^6 transfers (100 per merchant, spread over
// the last 30 days, in every state) and 10^6 events, set-based in one transaction (no HTTP): about a
// minute on SQLite, a few on PostgreSQL. The benchmark's own merchant is created afterwards, as usual,
// so its reads run against indexes that hold a million other rows.
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';

export type GrowthTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; schema: string };

export const MERCHANTS = 10_000;
export const TRANSFERS = 1_000_000;
const DAY = 86_400_000;

// A transfer's details as the service stores them (about 700 bytes of JSON).
export const DETAILS = JSON.stringify({
  parcelSize: 'SMALL',
  description: 'Grown parcel',
  pickupLocation: { type: 'Point', coordinates: [37.6136, 55.7575] },
  pickupAddress: 'Tverskaya St 1, Moscow',
  destinationLocation: { type: 'Point', coordinates: [37.5886, 55.7339] },
  destinationAddress: 'Komsomolsky Ave 24, Moscow',
  destinationAddressMetadata: { lat: 55.7339, lng: 37.5886, display_name: 'Komsomolsky Ave 24, Moscow', city: 'Moscow' },
  pickupAddressMetaData: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
  deliveryOptionName: 'Standard',
  recipientInfo: { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-00' },
  recipientFullName: 'Anna Ivanova',
  isFragile: false,
  isPerishable: false,
  senderInfo: { merchantId: 'm', name: 'Grown shop', warehouseName: 'Main', phone: '+7 495 000-00-00', email: 'w@example.com' },
});
const STATES = ['inProgress', 'courierAssigned', 'pickedUp', 'delivered', 'cancelled', 'delivered', 'delivered', 'returned'];

/** Seeds the store; returns a one-line description for the report. */
export async function seedGrowth(target: GrowthTarget, log: (line: string) => void): Promise<string> {
  const now = Date.now();
  log(`growth: seeding ${MERCHANTS} merchants, ${TRANSFERS} quotes, transfers and events`);
  if (target.kind === 'sqlite') seedSqlite(target.file, now);
  else await seedPostgres(target.url, target.schema, now);
  return `grown: ${MERCHANTS.toLocaleString('en')} merchants, ${TRANSFERS.toLocaleString('en')} transfers, quotes and events`;
}

// Ids look like UUIDs and cannot collide with the service's random v4/v7 ones (version nibble 0).
const sqliteId = (tag: string, expr: string) => `printf('%08x-${tag}-0000-8000-%012x', ${expr}, ${expr})`;
const states = `(case (i % ${STATES.length}) ${STATES.map((s, k) => `when ${k} then '${s}'`).join(' ')} end)`;

function seedSqlite(file: string, now: number): void {
  const db = new DatabaseSync(file);
  try {
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000');
    const seq = (n: number) => `with recursive c(i) as (select 0 union all select i + 1 from c where i < ${n - 1})`;
    const merchant = (i: string) => sqliteId('0001', `(${i}) % ${MERCHANTS}`);
    db.exec('BEGIN IMMEDIATE');
    db.exec(`${seq(MERCHANTS)} insert into merchants (id, name, balance, mode, created_at, updated_at)
      select ${sqliteId('0001', 'i')}, 'Grown shop ' || i, 100000000, 'live', ${now - 60 * DAY}, ${now - 60 * DAY} from c`);
    db.exec(`${seq(MERCHANTS)} insert into warehouses (id, merchant_id, name, name_int, status, address, contact_phone, contact_email, location_metadata, lat, lng, created_at, updated_at)
      select ${sqliteId('0002', 'i')}, ${sqliteId('0001', 'i')}, 'Main', null, 'ACTIVE', 'Tverskaya St 1, Moscow', '+7 495 000-00-00', null,
        '{"display_name":"Tverskaya St 1, Moscow","lat":55.7575,"lng":37.6136}', 55.7575, 37.6136, ${now - 60 * DAY}, ${now - 60 * DAY} from c`);
    const at = `(${now} - (${TRANSFERS} - i) * ${Math.floor((30 * DAY) / TRANSFERS)})`;
    db.exec(`${seq(TRANSFERS)} insert into quotes (id, merchant_id, warehouse_id, transfer_id, event_id, status, tariff_version, currency, request, pickup, products, expires_at, created_at, consumed_at)
      select ${sqliteId('0003', 'i')}, ${merchant('i')}, ${sqliteId('0002', `i % ${MERCHANTS}`)}, ${sqliteId('0004', 'i')}, ${sqliteId('0005', 'i')},
        'consumed', 1, 'RUB', '{}', '{}', '{}', ${at} + 900000, ${at}, ${at} from c`);
    db.exec(`${seq(TRANSFERS)} insert into transfers (id, merchant_id, quote_id, warehouse_id, product_key, state, source, mode, transfer_code, tracking_code,
        total_amount, currency, payment_ttl_minutes, payment_expires_at, details, delivery_pin, courier_id, courier_name, cancellation_fee, return_fee,
        refunded_amount, cancellation, delivery_failure, last_sequence, next_step_at, pickup_lat, pickup_lng, courier_payout, code_attempts, locked, created_at, updated_at)
      select ${sqliteId('0004', 'i')}, ${merchant('i')}, ${sqliteId('0003', 'i')}, ${sqliteId('0002', `i % ${MERCHANTS}`)}, 'standard', ${states}, 'API', 'live',
        printf('G%09d', i), printf('GT%09d', i), 31438, 'RUB', 30, ${at} + 1800000, '${DETAILS.replace(/'/g, "''")}', '0000', null, null, 0, 0, 0, null, null, 2, null,
        55.7575, 37.6136, 25000, 0, 0, ${at}, ${at} from c`);
    db.exec(`${seq(TRANSFERS)} insert into events (id, merchant_id, transfer_id, sequence, type, state, actor_type, actor_id, data, occurred_at)
      select ${sqliteId('0006', 'i')}, ${merchant('i')}, ${sqliteId('0004', 'i')}, 2, 'transfer.created', 'inProgress', 'merchant', null,
        '{"totalPrice":314.38,"currency":"RUB","productKey":"standard"}', ${at} from c`);
    db.exec('COMMIT');
    db.exec('ANALYZE');
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

async function seedPostgres(url: string, schema: string, now: number): Promise<void> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  const id = (tag: string, expr: string) => `lpad(to_hex(${expr}), 8, '0') || '-${tag}-0000-8000-' || lpad(to_hex(${expr}), 12, '0')`;
  const merchant = (i: string) => id('0001', `(${i}) % ${MERCHANTS}`);
  const at = `(${now}::bigint - (${TRANSFERS} - i)::bigint * ${Math.floor((30 * DAY) / TRANSFERS)})`;
  const stateCase = `(array[${STATES.map((s) => `'${s}'`).join(',')}])[(i % ${STATES.length}) + 1]`;
  try {
    await client.query('begin');
    await client.query(`insert into merchants (id, name, balance, mode, created_at, updated_at)
      select ${id('0001', 'i')}, 'Grown shop ' || i, 100000000, 'live', ${now - 60 * DAY}, ${now - 60 * DAY} from generate_series(0, ${MERCHANTS - 1}) i`);
    await client.query(`insert into warehouses (id, merchant_id, name, name_int, status, address, contact_phone, contact_email, location_metadata, lat, lng, created_at, updated_at)
      select ${id('0002', 'i')}, ${id('0001', 'i')}, 'Main', null, 'ACTIVE', 'Tverskaya St 1, Moscow', '+7 495 000-00-00', null,
        '{"display_name":"Tverskaya St 1, Moscow","lat":55.7575,"lng":37.6136}', 55.7575, 37.6136, ${now - 60 * DAY}, ${now - 60 * DAY} from generate_series(0, ${MERCHANTS - 1}) i`);
    await client.query(`insert into quotes (id, merchant_id, warehouse_id, transfer_id, event_id, status, tariff_version, currency, request, pickup, products, expires_at, created_at, consumed_at)
      select ${id('0003', 'i')}, ${merchant('i')}, ${id('0002', `i % ${MERCHANTS}`)}, ${id('0004', 'i')}, ${id('0005', 'i')},
        'consumed', 1, 'RUB', '{}', '{}', '{}', ${at} + 900000, ${at}, ${at} from generate_series(0, ${TRANSFERS - 1}) i`);
    await client.query(
      `insert into transfers (id, merchant_id, quote_id, warehouse_id, product_key, state, source, mode, transfer_code, tracking_code,
        total_amount, currency, payment_ttl_minutes, payment_expires_at, details, delivery_pin, courier_id, courier_name, cancellation_fee, return_fee,
        refunded_amount, cancellation, delivery_failure, last_sequence, next_step_at, pickup_lat, pickup_lng, courier_payout, code_attempts, locked, created_at, updated_at)
      select ${id('0004', 'i')}, ${merchant('i')}, ${id('0003', 'i')}, ${id('0002', `i % ${MERCHANTS}`)}, 'standard', ${stateCase}, 'API', 'live',
        'G' || lpad(i::text, 9, '0'), 'GT' || lpad(i::text, 9, '0'), 31438, 'RUB', 30, ${at} + 1800000, $1, '0000', null, null, 0, 0, 0, null, null, 2, null,
        55.7575, 37.6136, 25000, 0, 0, ${at}, ${at} from generate_series(0, ${TRANSFERS - 1}) i`,
      [DETAILS],
    );
    await client.query(`insert into events (id, merchant_id, transfer_id, sequence, type, state, actor_type, actor_id, data, occurred_at)
      select ${id('0006', 'i')}, ${merchant('i')}, ${id('0004', 'i')}, 2, 'transfer.created', 'inProgress', 'merchant', null,
        '{"totalPrice":314.38,"currency":"RUB","productKey":"standard"}', ${at} from generate_series(0, ${TRANSFERS - 1}) i`);
    await client.query('commit');
    await client.query('analyze');
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  } finally {
    await client.end();
  }
}
