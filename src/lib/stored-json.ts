import { deepFreeze } from './deep-freeze.ts';

/**
 * JSON documents the store holds as text (a warehouse's location metadata, a transfer's details), parsed
 * once per distinct text and shared: a list of 50 items parsed every document on every request (17-43
 * µs an item). Keyed by the whole text, so an updated row is a new entry; bounded, the oldest dropped
 * first. The values are deep-frozen: nothing may change a document it did not parse itself (a mutation
 * throws, in modules, rather than leaking into other answers).
 */
const MAX_ENTRIES = 2048;
const parsed = new Map<string, unknown>();

export function storedJson<T>(text: string): T {
  let value = parsed.get(text);
  if (value === undefined) {
    value = deepFreeze(JSON.parse(text));
    if (parsed.size >= MAX_ENTRIES) parsed.delete(parsed.keys().next().value as string);
    parsed.set(text, value);
  }
  return value as T;
}
