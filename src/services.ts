import type { Kysely } from 'kysely';
import type { Config, SigningKey } from './config.ts';
import type { Database } from './db/database.ts';
import type { DB } from './db/types.ts';
import type { Clock } from './lib/clock.ts';
import { smtpMailer } from './modules/accounts/mail.ts';
import { AccountsService } from './modules/accounts/service.ts';
import { AuditService } from './modules/audit/service.ts';
import { AuthService, type ClientCredential } from './modules/auth/auth-service.ts';
import { credentialsRepository } from './modules/auth/credentials-repository.ts';
import { CredentialsService } from './modules/auth/credentials-service.ts';
import { TokenSigner } from './modules/auth/tokens.ts';
import { COURIER_CLIENT_PREFIX, couriersRepository } from './modules/couriers/repository.ts';
import { CouriersService } from './modules/couriers/service.ts';
import { OfferFeed } from './modules/dispatch/feed.ts';
import { DispatchService } from './modules/dispatch/service.ts';
import { GreatCircleModel } from './modules/eta/model.ts';
import { IdempotencyService } from './modules/idempotency/service.ts';
import { MerchantsService } from './modules/merchants/service.ts';
import { RecentQuotes } from './modules/quotes/recent.ts';
import { QuotesService } from './modules/quotes/service.ts';
import { TariffsService } from './modules/tariffs/service.ts';
import { TrackingService } from './modules/tracking/service.ts';
import { TransfersService } from './modules/transfers/service.ts';
import { WarehousesService } from './modules/warehouses/service.ts';
import { WebhookDelivery } from './modules/webhooks/delivery.ts';
import { WebhooksService } from './modules/webhooks/service.ts';

export interface Services {
  auth: AuthService;
  credentials: CredentialsService;
  merchants: MerchantsService;
  warehouses: WarehousesService;
  idempotency: IdempotencyService;
  tariffs: TariffsService;
  quotes: QuotesService;
  transfers: TransfersService;
  couriers: CouriersService;
  /** Offers to couriers (list, accept, decline, subscribe), the dispatcher's pass, operators' assignment. */
  dispatch: DispatchService;
  webhooks: WebhooksService;
  webhookDelivery: WebhookDelivery;
  tracking: TrackingService;
  accounts: AccountsService;
  audit: AuditService;
}

export interface ServiceDeps {
  config: Config;
  database: Database;
  clock: Clock;
  /** The token signing keys, or how to get them on first use (see TokenSigner). */
  signingKeys: SigningKey[] | (() => SigningKey[]);
}

/** Courier client ids start with cou_, merchant ones with cli_: one lookup, in the right table (auth knows neither). */
async function findClient(db: Kysely<DB>, clientId: string): Promise<ClientCredential | undefined> {
  if (clientId.startsWith(COURIER_CLIENT_PREFIX)) {
    const c = await couriersRepository.findByClientId(db, clientId);
    return c && { actor: 'courier', subject: c.id, secretHash: c.secret_hash, active: c.status === 'ACTIVE' };
  }
  const m = await credentialsRepository.findByClientId(db, clientId);
  return m && { actor: 'merchant', subject: m.merchant_id, secretHash: m.secret_hash, active: m.status === 'ACTIVE' };
}

/** Wires every service from config, database and clock. src/runtime.ts calls it once per process; tests build their own. */
export function createServices({ config, database, clock, signingKeys }: ServiceDeps): Services {
  const { db } = database;
  const auth = new AuthService({
    clock,
    signer: new TokenSigner(signingKeys, clock, config.tokenTtlSeconds),
    cacheTtlMs: config.authCacheTtlMs,
    findClient: (clientId) => findClient(db, clientId),
  });
  const audit = new AuditService(db, clock);
  const credentials = new CredentialsService(db, clock, (clientId) => auth.forget(clientId), audit);
  const warehouses = new WarehousesService(db, clock, config.maxWarehousesPerMerchant);
  const tariffs = new TariffsService(db, clock, audit);
  const travel = new GreatCircleModel({
    detourFactor: config.etaDetourFactor,
    speedKmh: config.etaSpeedKmh,
    expectedAssignSeconds: config.etaAssignSeconds,
    handoverSeconds: config.etaHandoverSeconds,
  });
  // PostgreSQL: quotes written here are paid without reading them back (their statement checks what they were planned from).
  const recentQuotes = database.dialect === 'postgres' ? new RecentQuotes() : undefined;
  const transfers = new TransfersService(db, clock, {
    audit,
    travel,
    courierAt: async (trx, courierId) => couriersRepository.position(trx, courierId),
    // Offered early enough that a courier from the edge of the first radius arrives by the window's start.
    dispatchLeadSeconds: travel.expectedAssignSeconds + travel.travelSeconds({ lat: 0, lng: 0 }, { lat: config.dispatchRadiusKm / 111.2, lng: 0 }),
    paymentTtlMinutes: config.paymentTtlMinutes,
    assignmentTimeoutMinutes: config.assignmentTimeoutMinutes,
    sandboxStepSeconds: config.sandboxStepSeconds,
    publicBaseUrl: config.publicBaseUrl,
    dialect: database.dialect,
    recentQuotes,
  });
  const couriers = new CouriersService({
    db,
    clock,
    transfers,
    maxJobsPerCourier: config.maxJobsPerCourier,
    onCredentialChange: (clientId) => auth.forget(clientId),
    audit,
  });
  return {
    auth,
    credentials,
    merchants: new MerchantsService(db, clock, (merchantId, trx) => credentials.issue(merchantId, trx), config.currency, audit),
    warehouses,
    idempotency: new IdempotencyService(db, clock, config.idempotencyTtlHours),
    tariffs,
    quotes: new QuotesService({
      db,
      clock,
      tariffs,
      dialect: database.dialect,
      ttlSeconds: config.quoteTtlSeconds,
      currency: config.currency,
      retentionDays: config.quoteRetentionDays,
      travel,
      recentQuotes,
    }),
    transfers,
    couriers,
    dispatch: new DispatchService({
      db,
      clock,
      couriers,
      transfers,
      model: travel,
      feed: new OfferFeed(database),
      settings: {
        radiusKm: config.dispatchRadiusKm,
        maxRadiusKm: config.dispatchMaxRadiusKm,
        offerTtlSeconds: config.offerTtlSeconds,
        missesBeforeOffline: config.offerMissesBeforeOffline,
        maxJobsPerCourier: config.maxJobsPerCourier,
      },
    }),
    webhooks: new WebhooksService(db, clock, { allowPrivate: config.webhookAllowPrivate, audit }),
    webhookDelivery: new WebhookDelivery(db, database.dialect, clock, {
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      concurrency: config.webhookConcurrency,
      endpointConcurrency: config.webhookEndpointConcurrency,
    }),
    tracking: new TrackingService(db, {
      refreshSeconds: config.trackingRefreshSeconds,
      // The courier's latest position while it carries the parcel (the sandbox courier has none).
      // The sandbox's simulated courier moves along the way at the model's speed.
      courierPosition: async ({ id, courierId }) => (courierId ? couriersRepository.position(db, courierId) : transfers.simulatedPosition(id)),
    }),
    accounts: new AccountsService(db, clock, {
      idleMs: config.sessionIdleMinutes * 60_000,
      absoluteMs: config.sessionAbsoluteHours * 3_600_000,
      linkTtlMs: 72 * 3_600_000,
      failuresPerAccount: config.loginFailuresPerAccount,
      failuresPerAddress: config.loginFailuresPerAddress,
      failureWindowMs: config.loginFailureWindowSeconds * 1000,
      issuer: 'Merchant delivery',
      mailer: config.smtpUrl ? smtpMailer(config.smtpUrl, config.mailFrom) : undefined,
      audit,
    }),
    audit,
  };
}
