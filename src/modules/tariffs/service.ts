import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import type { DB, Db } from '../../db/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { parseDecimal } from '../../lib/money.ts';
import { compileStrict } from '../../lib/validation.ts';
import { type AuditService, checkReason, type OperatorActor } from '../audit/service.ts';
import { type PricedProduct, type PricingInput, priceAll } from './pricing.ts';
import { TariffDocument } from './schemas.ts';

const DEFAULT_TARIFF = JSON.parse(readFileSync(new URL('./default-tariff.json', import.meta.url), 'utf8')) as TariffDocument;
const check = compileStrict<TariffDocument>(TariffDocument);

export interface Tariff {
  /** 0 is the built-in default, in force until an operator sets one. */
  version: number;
  document: TariffDocument;
}

/** Validates a tariff document: the schema, then rules a schema cannot say. Returns every problem. */
export function validateTariff(value: unknown): { ok: true; value: TariffDocument } | { ok: false; errors: string[] } {
  const result = check(value);
  if (!result.ok) return result;
  const errors: string[] = [];
  for (const [key, p] of Object.entries(result.value.products)) {
    if (parseDecimal(p.discountPct) > parseDecimal('100')) errors.push(`/products/${key}/discountPct must be at most 100`);
  }
  return errors.length ? { ok: false, errors } : result;
}

/** The operator-editable tariff: versioned rows, the newest in force. Quotes record the version they were priced with. */
export class TariffsService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #audit: AuditService;
  #cached: Tariff | undefined;
  constructor(db: Kysely<DB>, clock: Clock, audit: AuditService) {
    this.#db = db;
    this.#clock = clock;
    this.#audit = audit;
  }

  /** A document checked as set() would check it, without storing it (the console's preview). */
  validate(document: unknown): TariffDocument {
    const result = validateTariff(document);
    if (!result.ok) {
      throw new AppError('VALIDATION_FAILED', `Invalid tariff:\n  ${result.errors.join('\n  ')}`, {
        errors: result.errors.map((e) => ({ path: e.split(' ')[0], message: e.slice(e.indexOf(' ') + 1) })),
      });
    }
    return result.value;
  }

  async current(db: Db = this.#db): Promise<Tariff> {
    // Read the version each time (an operator may change it from another process); parse only when it changed.
    const latest = await db.selectFrom('tariffs').select('version').orderBy('version', 'desc').limit(1).executeTakeFirst();
    return this.atVersion(latest?.version ?? null, db);
  }

  /** The tariff of this version (null: none was ever set, the built-in default), parsed once per version. */
  async atVersion(version: number | null, db: Db = this.#db): Promise<Tariff> {
    if (version === null) return { version: 0, document: DEFAULT_TARIFF };
    if (this.#cached?.version === version) return this.#cached;
    const row = await db.selectFrom('tariffs').select(['version', 'document']).where('version', '=', version).executeTakeFirstOrThrow();
    this.#cached = { version: row.version, document: JSON.parse(row.document) };
    return this.#cached;
  }

  /**
   * What a sample request would be quoted under the tariff in force and under a proposed document
   * (validated as set() validates it), per product, before an operator saves it.
   */
  async preview(
    document: unknown,
    sample: PricingInput,
  ): Promise<{ metres: number; products: Array<{ key: string; name: string; current: PricedProduct | null; proposed: PricedProduct | null }> }> {
    const proposed = priceAll(this.validate(document), sample);
    const current = priceAll((await this.current()).document, sample);
    const keys = [...new Set([...Object.keys(current.products), ...Object.keys(proposed.products)])];
    return {
      metres: proposed.metres,
      products: keys.map((key) => ({
        key,
        name: proposed.products[key]?.name ?? current.products[key]?.name ?? key,
        current: current.products[key] ?? null,
        proposed: proposed.products[key] ?? null,
      })),
    };
  }

  /** Validates and stores a new version (audited with the operator and reason in the same transaction); an invalid document changes nothing. */
  async set(document: unknown, by?: OperatorActor, reason?: string): Promise<Tariff> {
    const value = this.validate(document);
    const why = reason === undefined ? null : checkReason(reason);
    return this.#db.transaction().execute(async (trx) => {
      const latest = await trx.selectFrom('tariffs').select('version').orderBy('version', 'desc').limit(1).executeTakeFirst();
      const version = (latest?.version ?? 0) + 1;
      await trx
        .insertInto('tariffs')
        .values({ version, document: JSON.stringify(value), created_at: this.#clock.now() })
        .execute();
      const previous = latest ? await trx.selectFrom('tariffs').select('document').where('version', '=', latest.version).executeTakeFirst() : undefined;
      if (by)
        await this.#audit.record(trx, by, {
          action: 'tariff.set',
          subjectType: 'tariff',
          subjectId: String(version),
          reason: why,
          before: { version: latest?.version ?? 0, document: previous ? JSON.parse(previous.document) : DEFAULT_TARIFF },
          after: { version, document: value },
        });
      return { version, document: value };
    });
  }
}
