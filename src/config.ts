/**
 * Environment -> typed, validated configuration. Fails fast at boot with every problem listed.
 * Every variable is documented in README.md ("Configuration").
 */

export interface Config {
  nodeEnv: string;
  host: string;
  port: number;
  databaseUrl: string;
  databasePoolSize: number;
  /** PostgreSQL schema to use (search_path); unset: the server's default. */
  databaseSchema: string | undefined;
  /** PostgreSQL default_transaction_isolation for every connection; unset: the server's default (read committed). */
  databaseIsolation: DatabaseIsolation | undefined;
  /** PostgreSQL: the hot statements as named prepared statements (off behind PgBouncer in transaction mode before 1.21). */
  databasePreparedStatements: boolean;
  /** PostgreSQL statement_timeout and lock_timeout of every connection, in ms (0: the server's own). */
  databaseStatementTimeoutMs: number;
  databaseLockTimeoutMs: number;
  logLevel: string;
  tokenTtlSeconds: number;
  /** Signing keys for access tokens; the first one signs, all of them verify (rotation). Empty: generate and persist (not in production). */
  tokenSigningKeys: SigningKey[];
  signingKeysFile: string;
  authCacheTtlMs: number;
  quoteTtlSeconds: number;
  /** Unused quotes are purged this many days after they expired. */
  quoteRetentionDays: number;
  paymentTtlMinutes: number;
  currency: string;
  maxWarehousesPerMerchant: number;
  bodyLimitBytes: number;
  /** A request (headers and body) must arrive within this many seconds, or it is answered 408. */
  requestTimeoutSeconds: number;
  /** Open connections per instance; more are answered 503 and closed. */
  maxConnections: number;
  tokenFailuresPerClient: number;
  tokenFailuresPerAddress: number;
  tokenFailureWindowSeconds: number;
  idempotencyTtlHours: number;
  /** Fastify trustProxy: false, true (every hop), a hop count, or the proxies' addresses/CIDRs. */
  trustProxy: boolean | number | string[];
  /** A transfer with no courier this long after creation is cancelled by the system, with a full refund. */
  assignmentTimeoutMinutes: number;
  /** Seconds between the sandbox's simulated courier's automatic steps; 0: manual steps only. */
  sandboxStepSeconds: number;
  /** How many active jobs (accepted, not ended) one courier may hold. */
  maxJobsPerCourier: number;
  /** The support line the courier app shows (e.g. when a job is locked after wrong codes); unset: "call your dispatcher". */
  supportPhone: string | undefined;
  /** Whether this instance runs the scheduler (assignment timeouts, sandbox steps). */
  schedulerEnabled: boolean;
  schedulerIntervalMs: number;
  /** GET /metrics on the API port needs `Authorization: Bearer METRICS_TOKEN`; unset: not served there. */
  metricsToken: string | undefined;
  /** Serve /metrics alone on this port (no token; keep it private); unset: no metrics port. */
  metricsPort: number | undefined;
  metricsHost: string;
  /** The public base URL of the API (scheme, host, optional path; no trailing slash), e.g. for the OAuth discovery document; unset: taken from each request. */
  publicBaseUrl: string | undefined;
  /** Whether `mds serve` runs the webhook worker (`mds worker` always does). */
  webhookWorkerEnabled: boolean;
  /** Deliver webhooks to loopback/private/link-local addresses too (development and tests only). */
  webhookAllowPrivate: boolean;
  webhookPollIntervalMs: number;
  /** Per try: connect, headers and the first 1 KiB of the answer (15 s; shorter only for tests). */
  webhookTimeoutMs: number;
  /** Deliveries in flight per worker, and per endpoint per worker. */
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
  /** Requests per minute per client address on the public tracking page. */
  trackingRateLimitPerMinute: number;
  /** Whether the merchant, courier and tracking request limits apply (failed token attempts are always limited). */
  rateLimitsEnabled: boolean;
  /** Requests per minute per merchant on the merchant API, unless the operator set the merchant's own. */
  merchantRateLimitPerMinute: number;
  /** Requests per minute per courier on the courier API (position updates count in a bucket of their own). */
  courierRateLimitPerMinute: number;
  /** Rate-limit counters shared by every instance in this Redis; unset: in memory, per instance. */
  redisUrl: string | undefined;
  /** Prefix of the rate-limit keys in Redis (several deployments can share one Redis). */
  rateLimitRedisPrefix: string;
  /** How often an open tracking page refreshes itself while the delivery is under way. */
  trackingRefreshSeconds: number;
  /** Web sessions end after this long without a request, and this long after login whatever happens. */
  sessionIdleMinutes: number;
  sessionAbsoluteHours: number;
  /** Session cookie `__Host-mds_session` with Secure (default in production); false: `mds_session` without Secure, for plain-HTTP development. */
  sessionCookieSecure: boolean;
  /** Failed logins per e-mail and per client address in a window, before further attempts wait. */
  loginFailuresPerAccount: number;
  loginFailuresPerAddress: number;
  loginFailureWindowSeconds: number;
  /** Invites and reset links are also e-mailed through this SMTP server (smtp[s]://user:pass@host:port); unset: links are only shown. */
  smtpUrl: string | undefined;
  mailFrom: string;
  /** Dispatch: couriers first looked for within this radius of the pickup, doubling each round up to the max. */
  dispatchRadiusKm: number;
  dispatchMaxRadiusKm: number;
  /** How long one courier has to accept an offer before the next one gets it. */
  offerTtlSeconds: number;
  /** Offers expired in a row that set a courier offline. */
  offerMissesBeforeOffline: number;
  /** How often the dispatcher looks for work besides being woken by a payment or a decline in this process. */
  dispatchIntervalMs: number;
  /** The travel-time model (README "ETAs"): road over great-circle distance, km/h per product, expected assign and handover times. */
  etaDetourFactor: number;
  etaSpeedKmh: Record<string, number> & { default: number };
  etaAssignSeconds: number;
  etaHandoverSeconds: number;
}

export interface SigningKey {
  kid: string;
  secret: Buffer;
}

export type DatabaseIsolation = 'read committed' | 'repeatable read' | 'serializable';
const ISOLATION_LEVELS: Record<string, DatabaseIsolation> = {
  read_committed: 'read committed',
  repeatable_read: 'repeatable read',
  serializable: 'serializable',
};

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

export const DEFAULT_DATABASE_URL = 'sqlite:./data/mds.sqlite';

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];

  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return def;
    }
    return Number(raw);
  };
  const str = (name: string, def: string): string => {
    const raw = env[name];
    return raw === undefined || raw === '' ? def : raw.trim();
  };

  const nodeEnv = str('NODE_ENV', 'development');
  const databaseUrl = str('DATABASE_URL', DEFAULT_DATABASE_URL);
  if (!/^(sqlite:|file:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    problems.push(`DATABASE_URL must start with sqlite:, file:, postgres:// or postgresql://, got "${redactUrl(databaseUrl)}"`);
  }

  const logLevel = str('LOG_LEVEL', nodeEnv === 'test' ? 'silent' : 'info');
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`);
  }

  const currency = str('CURRENCY', 'RUB');
  if (!/^[A-Z]{3}$/.test(currency)) problems.push(`CURRENCY must be an ISO 4217 code such as RUB or EUR, got "${currency}"`);

  let tokenSigningKeys: SigningKey[] = [];
  try {
    tokenSigningKeys = parseSigningKeys(str('TOKEN_SIGNING_KEYS', ''));
  } catch (e) {
    problems.push((e as Error).message);
  }
  if (nodeEnv === 'production' && tokenSigningKeys.length === 0) {
    problems.push('TOKEN_SIGNING_KEYS is required when NODE_ENV=production (generate one with `npx mds keys generate`)');
  }

  if (env.DATABASE_SCHEMA && !/^[a-z_][a-z0-9_]{0,62}$/.test(env.DATABASE_SCHEMA.trim())) {
    problems.push(`DATABASE_SCHEMA must be a lower-case SQL identifier, got "${env.DATABASE_SCHEMA}"`);
  }

  const isolationRaw = str('DATABASE_ISOLATION', '');
  if (isolationRaw !== '' && !Object.hasOwn(ISOLATION_LEVELS, isolationRaw)) {
    problems.push(`DATABASE_ISOLATION must be one of ${Object.keys(ISOLATION_LEVELS).join(', ')}, got "${isolationRaw}"`);
  }

  const bool = (name: string, def: boolean): boolean => {
    const raw = str(name, String(def));
    if (raw !== 'true' && raw !== 'false') problems.push(`${name} must be true or false, got "${raw}"`);
    return raw === 'true' || (raw !== 'false' && def);
  };

  const metricsToken = str('METRICS_TOKEN', '') || undefined;
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,200}$/.test(metricsToken)) {
    problems.push('METRICS_TOKEN must be 16 to 200 printable characters without spaces (generate one with `openssl rand -hex 24`)');
  }

  const smtpUrl = str('SMTP_URL', '') || undefined;
  if (smtpUrl !== undefined && !/^smtps?:\/\/[^\s/]+/.test(smtpUrl)) {
    problems.push(`SMTP_URL must look like smtp://user:password@host:587 or smtps://host:465, got "${redactUrl(smtpUrl)}"`);
  }

  const publicBaseUrl = parsePublicBaseUrl(str('PUBLIC_BASE_URL', ''), problems);

  const supportPhone = str('SUPPORT_PHONE', '') || undefined;
  if (supportPhone !== undefined && !/^\+?[0-9 ()-]{3,30}$/.test(supportPhone)) {
    problems.push(`SUPPORT_PHONE must be a phone number (digits with optional +, spaces, dashes, parentheses), got "${supportPhone.slice(0, 40)}"`);
  }

  const trustProxyRaw = str('TRUST_PROXY', 'false');
  const trustProxy = parseTrustProxy(trustProxyRaw);
  if (trustProxy === undefined) {
    problems.push(`TRUST_PROXY must be false, true, a hop count, or comma-separated proxy addresses/CIDRs, got "${trustProxyRaw}"`);
  }

  const redisUrl = str('REDIS_URL', '') || undefined;
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    problems.push(`REDIS_URL must start with redis:// or rediss://, got "${redactUrl(redisUrl)}"`);
  }

  const config: Config = {
    nodeEnv,
    host: str('HOST', '127.0.0.1'),
    port: int('PORT', 3000, 0, 65535),
    databaseUrl,
    databasePoolSize: int('DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseSchema: env.DATABASE_SCHEMA?.trim() || undefined,
    databaseIsolation: Object.hasOwn(ISOLATION_LEVELS, isolationRaw) ? ISOLATION_LEVELS[isolationRaw] : undefined,
    databasePreparedStatements: bool('DATABASE_PREPARED_STATEMENTS', true),
    databaseStatementTimeoutMs: int('DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 0, 3_600_000),
    databaseLockTimeoutMs: int('DATABASE_LOCK_TIMEOUT_MS', 5_000, 0, 3_600_000),
    logLevel,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 3600, 1, 86_400),
    tokenSigningKeys,
    signingKeysFile: str('SIGNING_KEYS_FILE', './data/signing-keys.json'),
    authCacheTtlMs: int('AUTH_CACHE_TTL_MS', 1000, 0, 1000),
    quoteTtlSeconds: int('QUOTE_TTL_SECONDS', 900, 1, 86_400),
    quoteRetentionDays: int('QUOTE_RETENTION_DAYS', 30, 1, 3650),
    paymentTtlMinutes: int('PAYMENT_TTL_MINUTES', 30, 1, 10_080),
    currency,
    maxWarehousesPerMerchant: int('MAX_WAREHOUSES_PER_MERCHANT', 1000, 1, 100_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 65_536, 1024, 10_485_760),
    requestTimeoutSeconds: int('REQUEST_TIMEOUT_SECONDS', 30, 1, 600),
    maxConnections: int('MAX_CONNECTIONS', 1024, 1, 1_000_000),
    tokenFailuresPerClient: int('TOKEN_FAILURES_PER_CLIENT', 10, 1, 1_000_000),
    tokenFailuresPerAddress: int('TOKEN_FAILURES_PER_ADDRESS', 50, 1, 1_000_000),
    tokenFailureWindowSeconds: int('TOKEN_FAILURE_WINDOW_SECONDS', 60, 1, 86_400),
    idempotencyTtlHours: int('IDEMPOTENCY_TTL_HOURS', 24, 24, 8760),
    trustProxy: trustProxy ?? false,
    assignmentTimeoutMinutes: int('ASSIGNMENT_TIMEOUT_MINUTES', 60, 1, 10_080),
    sandboxStepSeconds: int('SANDBOX_STEP_SECONDS', 10, 0, 86_400),
    maxJobsPerCourier: int('MAX_JOBS_PER_COURIER', 1, 1, 100),
    supportPhone,
    schedulerEnabled: bool('SCHEDULER_ENABLED', true),
    schedulerIntervalMs: int('SCHEDULER_INTERVAL_SECONDS', 5, 1, 3600) * 1000,
    metricsToken,
    metricsPort: env.METRICS_PORT ? int('METRICS_PORT', 0, 0, 65535) : undefined,
    metricsHost: str('METRICS_HOST', '127.0.0.1'),
    publicBaseUrl,
    webhookWorkerEnabled: bool('WEBHOOK_WORKER_ENABLED', true),
    webhookAllowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', false),
    webhookPollIntervalMs: int('WEBHOOK_POLL_INTERVAL_MS', 200, 10, 60_000),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_SECONDS', 15, 1, 15) * 1000,
    webhookConcurrency: int('WEBHOOK_CONCURRENCY', 32, 1, 1000),
    webhookEndpointConcurrency: int('WEBHOOK_ENDPOINT_CONCURRENCY', 4, 1, 100),
    trackingRateLimitPerMinute: int('TRACKING_RATE_LIMIT_PER_MINUTE', 120, 1, 1_000_000),
    trackingRefreshSeconds: int('TRACKING_REFRESH_SECONDS', 10, 1, 3600),
    rateLimitsEnabled: bool('RATE_LIMITS_ENABLED', true),
    merchantRateLimitPerMinute: int('MERCHANT_RATE_LIMIT_PER_MINUTE', 1200, 1, 1_000_000),
    // At least 60: a courier's position once a second must always fit.
    courierRateLimitPerMinute: int('COURIER_RATE_LIMIT_PER_MINUTE', 600, 60, 1_000_000),
    redisUrl,
    rateLimitRedisPrefix: str('RATE_LIMIT_REDIS_PREFIX', 'mds:ratelimit:'),
    sessionIdleMinutes: int('SESSION_IDLE_MINUTES', 30, 1, 1440),
    sessionAbsoluteHours: int('SESSION_ABSOLUTE_HOURS', 12, 1, 720),
    // Secure outside development (and the tests' plain-HTTP injections): a staging or any other NODE_ENV gets it too.
    sessionCookieSecure: bool('SESSION_COOKIE_SECURE', nodeEnv !== 'development' && nodeEnv !== 'test'),
    loginFailuresPerAccount: int('LOGIN_FAILURES_PER_ACCOUNT', 5, 1, 1000),
    loginFailuresPerAddress: int('LOGIN_FAILURES_PER_ADDRESS', 30, 1, 100_000),
    loginFailureWindowSeconds: int('LOGIN_FAILURE_WINDOW_SECONDS', 900, 1, 86_400),
    smtpUrl,
    mailFrom: str('MAIL_FROM', 'Merchant delivery service <no-reply@localhost>'),
    dispatchRadiusKm: int('DISPATCH_RADIUS_KM', 3, 1, 1000),
    dispatchMaxRadiusKm: int('DISPATCH_MAX_RADIUS_KM', 20, 1, 1000),
    offerTtlSeconds: int('OFFER_TTL_SECONDS', 30, 1, 3600),
    offerMissesBeforeOffline: int('OFFER_MISSES_BEFORE_OFFLINE', 3, 1, 1000),
    dispatchIntervalMs: int('DISPATCH_INTERVAL_MS', 1000, 50, 60_000),
    etaDetourFactor: int('ETA_DETOUR_PERCENT', 135, 100, 400) / 100,
    etaSpeedKmh: parseSpeeds(str('ETA_SPEED_KMH', 'default=20,standard=20,express=25'), problems),
    etaAssignSeconds: int('ETA_ASSIGN_SECONDS', 120, 0, 86_400),
    etaHandoverSeconds: int('ETA_HANDOVER_SECONDS', 180, 0, 3600),
  };
  if (config.dispatchMaxRadiusKm < config.dispatchRadiusKm) {
    problems.push(`DISPATCH_MAX_RADIUS_KM (${config.dispatchMaxRadiusKm}) must be at least DISPATCH_RADIUS_KM (${config.dispatchRadiusKm})`);
  }
  if (config.webhookAllowPrivate && nodeEnv === 'production') {
    problems.push('WEBHOOK_ALLOW_PRIVATE=true is for development and tests: it lets merchants make the service call internal addresses');
  }

  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  return config;
}

/** ETA_SPEED_KMH: "default=20,standard=20,express=25" (product key = km/h, 1 to 200); `default` is required. */
function parseSpeeds(raw: string, problems: string[]): Record<string, number> & { default: number } {
  const speeds: Record<string, number> = {};
  for (const part of raw.split(',')) {
    const m = /^\s*([a-z][a-z0-9_]{0,31})\s*=\s*(\d{1,3})\s*$/.exec(part);
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 200) {
      problems.push(`ETA_SPEED_KMH must look like "default=20,express=25" (km/h from 1 to 200), got "${raw}"`);
      return { default: 20 };
    }
    speeds[m[1]] = Number(m[2]);
  }
  if (speeds.default === undefined) {
    problems.push(`ETA_SPEED_KMH needs a default speed ("default=20,..."), got "${raw}"`);
    return { default: 20 };
  }
  return speeds as Record<string, number> & { default: number };
}

/** PUBLIC_BASE_URL: an absolute http(s) URL without query, fragment or credentials; returned without a trailing slash. */
function parsePublicBaseUrl(raw: string, problems: string[]): string | undefined {
  if (raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`PUBLIC_BASE_URL must be an absolute URL such as https://api.example.com, got "${raw}"`);
    return undefined;
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.search || url.hash || url.username || url.password || raw.includes('?') || raw.includes('#')) {
    problems.push(`PUBLIC_BASE_URL must be an http(s) URL without query, fragment or credentials, got "${raw}"`);
    return undefined;
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/** "kid1:BASE64URL,kid2:BASE64URL"; each secret at least 32 bytes. */
export function parseSigningKeys(raw: string): SigningKey[] {
  if (raw === '') return [];
  const keys = raw.split(',').map((part) => {
    const m = /^([A-Za-z0-9_-]{1,64}):([A-Za-z0-9_-]+={0,2})$/.exec(part.trim());
    if (!m) throw new Error('TOKEN_SIGNING_KEYS must look like "kid:base64url-secret[,kid2:secret2]"');
    const secret = Buffer.from(m[2], 'base64url');
    if (secret.length < 32) throw new Error(`TOKEN_SIGNING_KEYS: key "${m[1]}" must be at least 32 bytes (43 base64url characters)`);
    return { kid: m[1], secret };
  });
  if (new Set(keys.map((k) => k.kid)).size !== keys.length) throw new Error('TOKEN_SIGNING_KEYS: key ids must be unique');
  return keys;
}

/** A database URL without its password, safe for logs and error messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

/**
 * TRUST_PROXY: which X-Forwarded-For hops to believe (the client address feeds the token rate limit).
 * "true" trusts every hop, so clients could spoof their address unless the load balancer is the only
 * way in; a hop count ("1") or the load balancers' addresses ("10.0.0.0/8,192.168.1.5") are safer.
 */
export function parseTrustProxy(raw: string): boolean | number | string[] | undefined {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const list = raw.split(',').map((p) => p.trim());
  return list.every((p) => /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(p)) ? list : undefined;
}
