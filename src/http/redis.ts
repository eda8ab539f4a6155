import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';

/**
 * The Redis client of the rate limiter (REDIS_URL), closed with the app. A Redis that is down or slow
 * must cost requests little: one reconnection try per command and a 500 ms command timeout, after which
 * the limiter lets the request through (skipOnError). Its errors are logged at most once a minute.
 */
export async function openRedis(app: FastifyInstance, url: string): Promise<Redis> {
  // Loaded only when configured: most instances never need the client.
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 500, connectionName: 'mds-rate-limit' });
  let lastLogged = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastLogged < 60_000) return;
    lastLogged = Date.now();
    app.log.warn({ err: { message: err.message } }, 'Redis (rate-limit counters) unavailable: requests are not limited until it is back');
  });
  app.addHook('onClose', async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  return redis;
}
