/**
 * Sets `key` in `map` as its newest entry, dropping the oldest first when `max` are held: for memories
 * that are refreshed rarely (a read's result, not a per-request write). Dropping through keys().next()
 * walks past every entry deleted before it, so a map written on every request keeps its own order
 * instead (RecentQuotes' ring).
 */
export function rememberNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
