import { type Static, Type } from 'typebox';
import { component } from '../../lib/openapi-components.ts';
import { DateTime, EXAMPLE_IDS, GeoPoint, Phone, StringEnum, Text, Uuid } from '../../lib/schemas.ts';

const text = Text;
const nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);

export const WarehouseStatus = StringEnum(['ACTIVE', 'DISABLED'], { description: 'DISABLED warehouses cannot be quoted from' });

export const LocationMetadata = component(
  'LocationMetadata',
  Type.Object(
    {
      display_name: text(500),
      lat: Type.Number({ minimum: -90, maximum: 90 }),
      lng: Type.Number({ minimum: -180, maximum: 180 }),
      house_number: Type.Optional(text(200)),
      road: Type.Optional(text(200)),
      neighbourhood: Type.Optional(text(200)),
      suburb: Type.Optional(text(200)),
      city: Type.Optional(text(200)),
      postcode: Type.Optional(text(32)),
      country: Type.Optional(text(200)),
      country_code: Type.Optional(Type.String({ minLength: 2, maxLength: 3 })),
    },
    { additionalProperties: false },
  ),
);

/** The request example of the OpenAPI document; the response example extends it. */
const WAREHOUSE_INPUT_EXAMPLE = {
  name: 'Main warehouse',
  nameInt: 'main-warehouse',
  status: 'ACTIVE' as const,
  address: 'Tverskaya St 1, Moscow',
  contactPhone: '+7 495 000-00-00',
  contactEmail: 'warehouse@example.com',
  locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
};

export const WarehouseInput = component(
  'WarehouseInput',
  Type.Object(
    {
      name: text(200, 'Display name'),
      nameInt: Type.Optional(text(200, 'Second (international/slug-style) name')),
      status: Type.Optional(StringEnum(['ACTIVE', 'DISABLED'], { description: 'Defaults to ACTIVE' })),
      address: text(500, 'Free-text address'),
      contactPhone: Type.Optional(Phone()),
      contactEmail: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
      locationMetadata: LocationMetadata,
    },
    {
      additionalProperties: false,
      examples: [WAREHOUSE_INPUT_EXAMPLE],
    },
  ),
);
export type WarehouseInput = Static<typeof WarehouseInput>;

export const Warehouse = component(
  'Warehouse',
  Type.Object(
    {
      id: Uuid(),
      merchantId: Uuid('Owning merchant'),
      commersantId: Uuid('Owning merchant (same as merchantId; name kept as the interface spells it)'),
      name: Type.String(),
      nameInt: nullable(Type.String()),
      status: WarehouseStatus,
      address: Type.String(),
      contactPhone: nullable(Type.String()),
      contactEmail: nullable(Type.String()),
      locationMetadata: LocationMetadata,
      location: GeoPoint,
      type: Type.Literal('POINT'),
      createdAt: DateTime(),
      updatedAt: DateTime(),
    },
    { additionalProperties: false },
  ),
);
export type Warehouse = Static<typeof Warehouse>;

/** A warehouse as the service returns it (the OpenAPI response example). */
export const WAREHOUSE_EXAMPLE: Warehouse = {
  id: EXAMPLE_IDS.warehouse,
  merchantId: EXAMPLE_IDS.merchant,
  commersantId: EXAMPLE_IDS.merchant,
  ...WAREHOUSE_INPUT_EXAMPLE,
  location: { type: 'Point', coordinates: [37.6136, 55.7575] },
  type: 'POINT',
  createdAt: '2026-11-21T10:00:00.000Z',
  updatedAt: '2026-11-21T10:00:00.000Z',
};

export const WarehouseParams = Type.Object({ id: Uuid('Warehouse id', { examples: [EXAMPLE_IDS.warehouse] }) }, { additionalProperties: false });

export const WarehouseListQuery = Type.Object(
  {
    status: Type.Optional(WarehouseStatus),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size; without it every warehouse is returned', examples: [100] })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'From the Link rel="next" header of the previous page' })),
  },
  { additionalProperties: false },
);
export type WarehouseListQuery = Static<typeof WarehouseListQuery>;
