import { type Static, Type } from 'typebox';
import { component } from '../../lib/openapi-components.ts';
import { DateTime, EXAMPLE_IDS, StringEnum, Uuid } from '../../lib/schemas.ts';

export const LedgerEntry = component(
  'LedgerEntry',
  Type.Object(
    {
      id: Uuid(),
      kind: StringEnum(['TOP_UP', 'CHARGE', 'REFUND', 'ADJUSTMENT'], {
        description:
          "TOP_UP (by the operator), CHARGE (a paid transfer), REFUND (a cancellation or return), ADJUSTMENT (an operator's signed correction, e.g. taking back a mistaken top-up; the note says why)",
      }),
      amount: Type.Number({ description: 'Signed, major units: a charge is negative' }),
      balanceAfter: Type.Number({ description: 'The balance right after this entry, major units' }),
      transferId: Type.Union([Uuid(), Type.Null()], { description: 'The transfer charged or refunded' }),
      note: Type.Union([Type.String(), Type.Null()]),
      createdAt: DateTime(),
    },
    { additionalProperties: false },
  ),
);

export const Balance = component(
  'Balance',
  Type.Object(
    {
      balance: Type.Number({ description: 'Major units; always the sum of every ledger entry, never negative' }),
      currency: Type.String(),
      sandbox: Type.Boolean({ description: 'Sandbox balances are play money' }),
      entries: Type.Array(LedgerEntry, { description: 'Ledger entries, newest first, one page' }),
    },
    { additionalProperties: false },
  ),
);
export type Balance = Static<typeof Balance>;

export const BalanceQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'Entries per page (default 50)', examples: [50] })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'From the Link rel="next" header of the previous page' })),
  },
  { additionalProperties: false },
);
export type BalanceQuery = Static<typeof BalanceQuery>;

export const BALANCE_EXAMPLE: Balance = {
  balance: 4685.62,
  currency: 'RUB',
  sandbox: false,
  entries: [
    {
      id: '01a2005b-2d5a-7c6e-9f4a-7d8e9fa0b1c3',
      kind: 'REFUND',
      amount: 314.38,
      balanceAfter: 5000,
      transferId: EXAMPLE_IDS.transfer,
      note: null,
      createdAt: '2026-11-21T10:09:00.000Z',
    },
    {
      id: '01a2005a-1c4f-7b5d-8e3f-6c7d8e9fa0b2',
      kind: 'CHARGE',
      amount: -314.38,
      balanceAfter: 4685.62,
      transferId: EXAMPLE_IDS.transfer,
      note: null,
      createdAt: '2026-11-21T10:05:00.000Z',
    },
    {
      id: '01a20057-9d1c-7b2e-8a4f-5c6d7e8f9a0c',
      kind: 'TOP_UP',
      amount: 5000,
      balanceAfter: 5000,
      transferId: null,
      note: 'opening balance',
      createdAt: '2026-11-21T09:00:00.000Z',
    },
  ],
};
