import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../src/lib/clock.ts';
import { FailureLimiter } from '../src/modules/auth/rate-limit.ts';

test('FailureLimiter: blocks at the limit, frees after the window, stays bounded without forgetting recent keys', () => {
  const clock = new ManualClock();
  const limiter = new FailureLimiter(2, 60_000, clock);
  limiter.recordFailure('a');
  assert.equal(limiter.retryAfter('a'), 0);
  limiter.recordFailure('a');
  assert.equal(limiter.retryAfter('a'), 60);
  clock.advance(30_000);
  assert.equal(limiter.retryAfter('a'), 30);
  clock.advance(30_000);
  assert.equal(limiter.retryAfter('a'), 0);

  // A flood of distinct keys (e.g. many IPv6 addresses) evicts the oldest entries only.
  for (let i = 0; i < 99_000; i++) limiter.recordFailure(`flood-${i}`);
  limiter.recordFailure('recent');
  limiter.recordFailure('recent');
  for (let i = 99_000; i < 105_000; i++) limiter.recordFailure(`flood-${i}`); // passes the 100 000-key bound
  assert.equal(limiter.retryAfter('recent'), 60, 'a recent key keeps its count through the flood');
});
