export async function seedGrowth(_target: unknown, _log: (s: string) => void): Promise<string> {
  throw new Error('--growth: not implemented yet');
}
