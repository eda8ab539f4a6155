import type { Generated, Kysely, Transaction } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/** Row types. Times are epoch milliseconds (bigint in PostgreSQL, integer in SQLite); money is integer minor units. */
export interface MerchantsTable {
  id: string;
  name: string;
  balance: number;
  /** sandbox: play money, transfers driven by a simulated courier, never offered to real couriers. */
  mode: MerchantMode;
  created_at: number;
  updated_at: number;
  /** The operator's limit of requests per minute for this merchant; null (or absent on insert): the configured default. */
  rate_limit_per_minute?: number | null;
}

export interface CredentialsTable {
  id: string;
  client_id: string;
  merchant_id: string;
  secret_hash: string;
  status: 'ACTIVE' | 'REVOKED';
  created_at: number;
  revoked_at: number | null;
}

export interface LedgerEntriesTable {
  id: string;
  merchant_id: string;
  kind: 'TOP_UP' | 'CHARGE' | 'REFUND' | 'ADJUSTMENT';
  amount: number; // signed: a charge is negative
  balance_after: number;
  transfer_id: string | null;
  note: string | null;
  created_at: number;
  /** Who made it when a person did (an operator's top-up: "Name (role)", or "cli (user)"); absent or null otherwise. */
  created_by?: string | null;
}

export interface WarehousesTable {
  id: string;
  merchant_id: string;
  name: string;
  name_int: string | null;
  status: 'ACTIVE' | 'DISABLED';
  address: string;
  contact_phone: string | null;
  contact_email: string | null;
  location_metadata: string; // JSON
  lat: number;
  lng: number;
  created_at: number;
  updated_at: number;
  /** Given by the database on every write (triggers, migration 018), never by the service; PostgreSQL's quote checks it. */
  revision: Generated<string>;
}

export interface TariffsTable {
  version: number;
  document: string; // JSON, validated against the tariff schema before it is stored
  created_at: number;
}

export interface QuotesTable {
  id: string;
  merchant_id: string;
  warehouse_id: string;
  transfer_id: string;
  event_id: string;
  status: 'pending' | 'consumed';
  tariff_version: number;
  currency: string;
  request: string; // JSON: destination, parcel and flags as requested
  pickup: string; // JSON: the warehouse as it was when quoted
  products: string; // JSON: products with frozen prices
  expires_at: number;
  created_at: number;
  consumed_at: number | null;
}

export interface TransfersTable {
  id: string;
  merchant_id: string;
  quote_id: string;
  warehouse_id: string;
  product_key: string;
  state: TransferState;
  source: string;
  mode: MerchantMode;
  transfer_code: string;
  tracking_code: string;
  total_amount: number;
  currency: string;
  payment_ttl_minutes: number;
  payment_expires_at: number;
  details: string; // JSON: addresses, locations, metadata, recipient, sender, parcel
  delivery_pin: string;
  courier_id: string | null;
  courier_name: string | null;
  /** Fees frozen from the quote's tariff: kept back from the refund of a cancellation after assignment, of a return. */
  cancellation_fee: number;
  return_fee: number;
  refunded_amount: number;
  cancellation: string | null; // JSON: Cancellation
  delivery_failure: string | null; // JSON: { reason, comment }
  last_sequence: number;
  next_step_at: number | null;
  pickup_lat: number;
  pickup_lng: number;
  /** What the courier earns: the courier fee of the quoted product. */
  courier_payout: number;
  code_attempts: number;
  /** 1 after 5 wrong codes: the courier can do nothing more with the job until an operator unlocks it. */
  locked: number;
  /** The digits of recipientInfo.phone, for the dashboard's search (null only on rows seeded outside the service). */
  recipient_phone: string | null;
  /** Dispatch: how far the search for a courier has widened (radius DISPATCH_RADIUS_KM * 2^round, capped). */
  dispatch_round?: number;
  /** Not offered to couriers before this time (scheduled pickups); null: at once. */
  dispatch_at?: number | null;
  pickup_window_start?: number | null;
  pickup_window_end?: number | null;
  /** The travel-time model's estimates, recomputed on every change; null once terminal. */
  estimated_pickup_at?: number | null;
  estimated_delivery_at?: number | null;
  assigned_at?: number | null;
  picked_up_at?: number | null;
  delivered_at?: number | null;
  created_at: number;
  updated_at: number;
}

export interface CouriersTable {
  id: string;
  name: string;
  phone: string;
  /** Client credentials for POST /auth/token (one set per courier; the secret stored as SHA-256). */
  client_id: string;
  secret_hash: string;
  /** DISABLED: its tokens fail like revoked credentials. */
  status: 'ACTIVE' | 'DISABLED';
  online: number;
  lat: number | null;
  lng: number | null;
  location_at: number | null;
  /** Offers expired in a row; OFFER_MISSES_BEFORE_OFFLINE of them set the courier offline (absent on insert: 0). */
  missed_offers?: number;
  created_at: number;
  updated_at: number;
}

export type OfferStatus = 'open' | 'accepted' | 'declined' | 'expired' | 'withdrawn';

/** A transfer offered to one courier for OFFER_TTL_SECONDS; one outcome each (conditional updates from 'open'). */
export interface OffersTable {
  id: string;
  transfer_id: string;
  courier_id: string;
  status: OfferStatus;
  distance_metres: number;
  estimated_pickup_at: number;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
}

export interface EventsTable {
  position: Generated<number>;
  id: string;
  merchant_id: string;
  transfer_id: string;
  sequence: number;
  type: string;
  state: TransferState | null;
  actor_type: ActorType;
  actor_id: string | null;
  /** The person's name when the event was written (a courier's first name, an operator's display name); null otherwise and on older rows. */
  actor_name: string | null;
  data: string; // JSON
  occurred_at: number;
}

export interface IdempotencyKeysTable {
  merchant_id: string;
  idempotency_key: string;
  request_hash: string;
  state: 'IN_PROGRESS' | 'DONE';
  response_status: number | null;
  response_headers: string | null; // JSON
  response_body: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookEndpointsTable {
  id: string;
  merchant_id: string;
  url: string;
  description: string | null;
  event_types: string | null; // JSON array; null: every type
  status: 'ENABLED' | 'DISABLED';
  disabled_reason: string | null;
  /** In clear (signing needs it); never logged, returned only at creation and rotation. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookDeliveriesTable {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  message_id: string;
  event_type: string;
  event_position: number | null;
  payload: string | null;
  status: WebhookDeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  locked_until: number | null;
  lease: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  delivery_id: string;
  message_id: string;
  event_type: string;
  attempt: number;
  status: 'succeeded' | 'failed';
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number;
  next_attempt_at: number | null;
  created_at: number;
}

export type PersonKind = 'merchant' | 'operator' | 'courier';

/** A person who logs in with a browser (modules/accounts). */
export interface PeopleTable {
  id: string;
  kind: PersonKind;
  merchant_id: string | null;
  courier_id: string | null;
  role: string | null;
  email: string | null;
  phone: string | null;
  name: string;
  password_hash: string | null;
  totp_secret: string | null;
  totp_enabled_at: number | null;
  totp_last_step: number | null;
  created_at: number;
  updated_at: number;
}

export interface SessionsTable {
  id_hash: string;
  person_id: string;
  stage: 'full' | 'second_factor';
  csrf_secret: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  ip: string | null;
  user_agent: string | null;
  /** An operator's session "viewing as" this merchant: the dashboard opens read-only for it. */
  view_as_merchant_id?: string | null;
}

export interface OneTimeLinksTable {
  token_hash: string;
  person_id: string;
  purpose: 'invite' | 'reset';
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface RecoveryCodesTable {
  code_hash: string;
  person_id: string;
  created_at: number;
  used_at: number | null;
}

export type MerchantMode = 'live' | 'sandbox';

/** Transfer states, in the interface's camelCase (the lifecycle is in modules/transfers/lifecycle.ts). */
export const TRANSFER_STATES = ['inProgress', 'courierAssigned', 'pickedUp', 'delivered', 'returning', 'returned', 'cancelled'] as const;
export type TransferState = (typeof TRANSFER_STATES)[number];

/** Who caused a change: the merchant (API), a courier, an operator (CLI), or the service itself (scheduler). */
export type ActorType = 'merchant' | 'courier' | 'operator' | 'system';

export interface DB {
  merchants: MerchantsTable;
  credentials: CredentialsTable;
  ledger_entries: LedgerEntriesTable;
  warehouses: WarehousesTable;
  tariffs: TariffsTable;
  quotes: QuotesTable;
  transfers: TransfersTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  couriers: CouriersTable;
  offers: OffersTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  people: PeopleTable;
  sessions: SessionsTable;
  one_time_links: OneTimeLinksTable;
  recovery_codes: RecoveryCodesTable;
  audit_log: AuditLogTable;
}

/** Append-only (triggers refuse UPDATE and DELETE). */
export interface AuditLogTable {
  id: string;
  occurred_at: number;
  operator_id: string | null;
  operator_name: string;
  operator_role: string;
  machine_user: string | null;
  action: string;
  subject_type: string;
  subject_id: string | null;
  merchant_id: string | null;
  reason: string | null;
  before: string | null;
  after: string | null;
}

/** Repositories take either the database or an open transaction. */
export type Db = Kysely<DB> | Transaction<DB>;
