import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { minorToNumber } from '../../lib/money.ts';
import { AUTH_ERRORS, errorResponses, json, nextLink } from '../../lib/schemas.ts';
import { BALANCE_EXAMPLE, Balance, BalanceQuery } from './schemas.ts';

export async function balanceRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/balance',
    {
      schema: {
        operationId: 'getBalance',
        tags: ['balance'],
        summary: 'The balance and its ledger',
        description:
          'The authenticated merchant\'s balance and currency, with its ledger entries newest first: top-ups, charges for transfers and refunds of cancellations and returns (with their `transferId`). The balance always equals the sum of the entries. Pages of `limit` (default 50); the next page is announced in a `Link: <...>; rel="next"` header.',
        security: [{ bearerAuth: [] }],
        querystring: BalanceQuery,
        response: {
          200: {
            ...json(Balance, 'The balance and one page of its ledger', BALANCE_EXAMPLE),
            headers: { link: { type: 'string', description: 'Present when there are older entries: <url>; rel="next"' } },
          },
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS]),
        },
      },
    },
    async (request, reply): Promise<Balance> => {
      const page = await app.services.merchants.balancePage(request.principal.merchantId, request.query);
      if (page.nextCursor) reply.header('link', nextLink('/balance', request.query, page.nextCursor));
      return {
        balance: minorToNumber(page.merchant.balanceMinor),
        currency: page.merchant.currency,
        sandbox: page.merchant.mode === 'sandbox',
        entries: page.entries.map((e) => ({
          id: e.id,
          kind: e.kind,
          amount: minorToNumber(e.amountMinor),
          balanceAfter: minorToNumber(e.balanceAfterMinor),
          transferId: e.transferId,
          note: e.note,
          createdAt: e.createdAt,
        })),
      };
    },
  );
}
