import type { Migration } from 'kysely/migration';
import type { Dialect } from '../types.ts';
import { initial } from './001_initial.ts';
import { lifecycle } from './002_lifecycle.ts';
import { couriers } from './003_couriers.ts';
import { webhooks } from './004_webhooks.ts';
import { rateLimits } from './005_rate_limits.ts';
import { accounts } from './006_accounts.ts';
import { dashboard } from './007_dashboard.ts';
import { operatorConsole } from './008_operator_console.ts';
import { dispatch } from './009_dispatch.ts';
import { courierApp } from './010_courier_app.ts';
import { unusedIndexes } from './011_unused_indexes.ts';
import { ledgerAdjustments } from './012_ledger_adjustments.ts';
import { eventActorNames } from './013_event_actor_names.ts';
import { consoleNewest } from './014_console_newest.ts';
import { merchantNewest } from './015_merchant_newest.ts';
import { quoteRetention } from './016_quote_retention.ts';
import { unusedQuoteExpiry } from './017_unused_quote_expiry.ts';
import { warehouseRevision } from './018_warehouse_revision.ts';

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
    '2026-11-25-008-operator-console': operatorConsole(dialect),
    '2026-11-25-009-dispatch': dispatch(dialect),
    '2026-11-25-010-courier-app': courierApp(),
    '2026-11-25-011-unused-indexes': unusedIndexes(),
    '2026-11-25-012-ledger-adjustments': ledgerAdjustments(dialect),
    '2026-11-25-013-event-actor-names': eventActorNames(),
    '2026-11-26-014-console-newest': consoleNewest(),
    '2026-11-26-015-merchant-newest': merchantNewest(),
    '2026-11-29-016-quote-retention': quoteRetention(),
    '2026-11-29-017-unused-quote-expiry': unusedQuoteExpiry(),
    '2026-11-30-018-warehouse-revision': warehouseRevision(dialect),
  };
}
