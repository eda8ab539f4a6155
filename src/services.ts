import type { Config, SigningKey } from './config.ts';
import type { Database } from './db/database.ts';
import type { Clock } from './lib/clock.ts';
import { smtpMailer } from './modules/accounts/mail.ts';
import { AccountsService } from './modules/accounts/service.ts';
import { AuthService } from './modules/auth/auth-service.ts';
import { CredentialsService } from './modules/auth/credentials-service.ts';
import { FailureLimiter } from './modules/auth/rate-limit.ts';
import { TokenSigner } from './modules/auth/tokens.ts';
import { couriersRepository } from './modules/couriers/repository.ts';
import { CouriersService } from './modules/couriers/service.ts';
import { IdempotencyService } from './modules/idempotency/service.ts';
import { MerchantsService } from './modules/merchants/service.ts';
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
  webhooks: WebhooksService;
  webhookDelivery: WebhookDelivery;
  tracking: TrackingService;
  accounts: AccountsService;
}

export interface ServiceDeps {
  config: Config;
  database: Database;
  clock: Clock;
  signingKeys: SigningKey[];
}

/** Wires every service from config, database and clock. The HTTP app and the CLI share this. */
export function createServices({ config, database, clock, signingKeys }: ServiceDeps): Services {
  const { db } = database;
  const windowMs = config.tokenFailureWindowSeconds * 1000;
  const auth = new AuthService({
    db,
    clock,
    signer: new TokenSigner(signingKeys, clock, config.tokenTtlSeconds),
    cacheTtlMs: config.authCacheTtlMs,
    clientLimiter: new FailureLimiter(config.tokenFailuresPerClient, windowMs, clock),
    addressLimiter: new FailureLimiter(config.tokenFailuresPerAddress, windowMs, clock),
  });
  const credentials = new CredentialsService(db, clock, (clientId) => auth.forget(clientId));
  const warehouses = new WarehousesService(db, clock, config.maxWarehousesPerMerchant);
  const tariffs = new TariffsService(db, clock);
  const transfers = new TransfersService(db, clock, {
    paymentTtlMinutes: config.paymentTtlMinutes,
    assignmentTimeoutMinutes: config.assignmentTimeoutMinutes,
    sandboxStepSeconds: config.sandboxStepSeconds,
    publicBaseUrl: config.publicBaseUrl,
  });
  return {
    auth,
    credentials,
    merchants: new MerchantsService(db, clock, credentials, config.currency),
    warehouses,
    idempotency: new IdempotencyService(db, clock, config.idempotencyTtlHours),
    tariffs,
    quotes: new QuotesService({
      db,
      clock,
      tariffs,
      warehouses,
      ttlSeconds: config.quoteTtlSeconds,
      currency: config.currency,
      retentionDays: config.quoteRetentionDays,
    }),
    transfers,
    couriers: new CouriersService({
      db,
      clock,
      transfers,
      maxJobsPerCourier: config.maxJobsPerCourier,
      onCredentialChange: (clientId) => auth.forget(clientId),
    }),
    webhooks: new WebhooksService(db, clock, { allowPrivate: config.webhookAllowPrivate }),
    webhookDelivery: new WebhookDelivery(db, database.dialect, clock, {
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      concurrency: config.webhookConcurrency,
      endpointConcurrency: config.webhookEndpointConcurrency,
    }),
    tracking: new TrackingService(db, clock, {
      refreshSeconds: config.trackingRefreshSeconds,
      rateLimitPerMinute: config.trackingRateLimitPerMinute,
      // The courier's latest position while it carries the parcel (the sandbox courier has none).
      courierPosition: async ({ courierId }) => (courierId ? couriersRepository.position(db, courierId) : undefined),
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
    }),
  };
}
