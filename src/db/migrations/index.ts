import type { Migration } from 'kysely/migration';
import type { Dialect } from '../types.ts';
import { initial } from './001_initial.ts';
import { lifecycle } from './002_lifecycle.ts';
import { couriers } from './003_couriers.ts';
import { webhooks } from './004_webhooks.ts';
import { rateLimits } from './005_rate_limits.ts';
import { accounts } from './006_accounts.ts';
import { dashboard } from './007_dashboard.ts';
import { unusedIndexes } from './011_unused_indexes.ts';

/** Every migration, in order. Names sort lexically; never rename or edit one that has shipped. */
export function allMigrations(dialect: Dialect): Record<string, Migration> {
  return {
    '2026-11-21-001-initial': initial(dialect),
    '2026-11-23-002-lifecycle': lifecycle(dialect),
    '2026-11-23-003-couriers': couriers(dialect),
    '2026-11-23-004-webhooks': webhooks(dialect),
    '2026-11-23-005-rate-limits': rateLimits(),
    '2026-11-23-006-accounts': accounts(dialect),
    '2026-11-23-007-dashboard': dashboard(dialect),
    '2026-11-25-011-unused-indexes': unusedIndexes(),
  };
}
