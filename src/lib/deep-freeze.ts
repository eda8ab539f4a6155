/**
 * Freezes a value and everything it holds, so a shared object (a parsed stored document, a remembered
 * API shape) cannot be changed by one caller under another (a mutation throws, in modules). Already
 * frozen parts are skipped: a shape that holds a shared document does not walk it again.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
