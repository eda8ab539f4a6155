// `node bench/joins.ts`: what a 50-item list answer costs to assemble from its items' remembered JSON, with that
// JSON as fast-json-stringify returns it (a rope: V8's tree of the pieces `+=` made, which every join walks
// again) and flattened once, as src/http/serialization.ts now keeps it (docs/benchmarks.md "Twenty-ninth pass").
// The items are the API's warehouse example under 50 names, written by the serializer the service uses.
// Microseconds a join, median of 5 runs of 20 000 joins each, in turn; absolute figures move with the machine.
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { lazySerializers, withNullables } from '../src/http/serialization.ts';
import { WAREHOUSE_EXAMPLE, Warehouse } from '../src/modules/warehouses/schemas.ts';
import { median } from './tokens.ts';

const route = { schema: withNullables(Warehouse), method: 'GET', url: '/warehouses/:id', httpStatus: '200' } as never;
const write = SerializerSelector()({}, {})(route);
const items = Array.from({ length: 50 }, (_, i) => Object.freeze({ ...WAREHOUSE_EXAMPLE, name: `Warehouse ${i + 1}` }));
const ropes = items.map((item) => write(item));
const flat = items.map((item) => {
  const json = write(item);
  Buffer.byteLength(json); // flattens it in place, as the service's serializer does
  return json;
});
// The list as the service's serializer writes it (50 frozen items: their JSON remembered, flat).
const list = lazySerializers({}, {})({ ...(route as object), schema: { type: 'array', items: Warehouse }, url: '/warehouses' } as never);

/** The list serializer's join: "[", each item's JSON and a comma, then "]". */
function join(parts: string[]): string {
  const all = new Array<string>(2 * parts.length + 1);
  all[0] = '[';
  for (let i = 0; i < parts.length; i++) {
    all[2 * i + 1] = parts[i];
    all[2 * i + 2] = ',';
  }
  all[2 * parts.length] = ']';
  return all.join('');
}

const cases: Array<[string, () => string]> = [
  ['the items as fast-json-stringify returned them (ropes)', () => join(ropes)],
  ['the items flattened once', () => join(flat)],
  ["the service's list serializer (remembered, flat)", () => list(items)],
];
const runs = new Map<string, number[]>(cases.map(([name]) => [name, []]));
let bytes = 0;
for (let run = 0; run < 6; run++) {
  for (const [name, f] of cases) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < 20_000; i++) bytes += f().length;
    if (run > 0) runs.get(name)?.push(Number(process.hrtime.bigint() - start) / 20_000 / 1000); // run 0 warms up
  }
}
console.log(`50 items of ${ropes[0].length} bytes; µs a join, median of 5 runs (${bytes} characters joined in all):`);
for (const [name, times] of runs) console.log(`  ${median(times).toFixed(1).padStart(6)}  ${name}`);
