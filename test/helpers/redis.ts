/**
 * Redis for tests: `redisTestUrl(t)` answers the URL of the test Redis (`MILLWRIGHT_TEST_REDIS_URL`,
 * default `redis://127.0.0.1:6379/11`, a database index of its own) when it answers PING; otherwise
 * it prints why, skips the test, and answers null. With `CI=true` an unreachable Redis fails.
 */
import { Redis } from 'ioredis';

export const redisUrl = process.env.MILLWRIGHT_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/11';

let probe: Promise<string | null> | undefined;

export async function redisTestUrl(t?: { skip(message?: string): void }): Promise<string | null> {
  probe ??= (async () => {
    const client = new Redis(redisUrl, {
      lazyConnect: true,
      connectTimeout: 2000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return null;
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      if (process.env.CI === 'true')
        throw new Error(`Redis is required in CI but is unreachable at ${redisUrl}: ${detail}`);
      const reason = `Redis unreachable at ${redisUrl} (${detail}); set MILLWRIGHT_TEST_REDIS_URL to run it`;
      console.log(`# skipping Redis test: ${reason}`);
      return reason;
    } finally {
      client.disconnect();
    }
  })();
  const reason = await probe;
  if (reason) {
    t?.skip(reason);
    return null;
  }
  return redisUrl;
}
