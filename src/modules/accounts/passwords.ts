// @node-rs/argon2 (a native addon) is loaded on the first password hashed or checked: an API-only process never pays for it.
const argon2 = () => import('@node-rs/argon2');

/**
 * Passwords: argon2id at OWASP's recommended minimum (m = 19 MiB, t = 2, p = 1), stored as PHC
 * strings ($argon2id$v=19$m=19456,t=2,p=1$salt$hash), so stronger parameters later still verify old hashes.
 */
const ARGON2ID = 2; // Algorithm.Argon2id (a const enum, which erasable TypeScript cannot import)
export const ARGON2_OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;

export async function hashPassword(password: string): Promise<string> {
  return (await argon2()).hash(password, ARGON2_OPTIONS);
}

// A hash of a random password: verified against when an e-mail is unknown or has no password yet,
// so such an attempt costs the same time as a wrong password (the answer's timing tells nothing).
let dummy: Promise<string> | undefined;

/** Whether `password` matches `phc`; with no hash, spends the same time and answers false. */
export async function verifyPassword(phc: string | null, password: string): Promise<boolean> {
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  if (phc === null) {
    dummy ??= hashPassword(`dummy-${Math.random()}-password`);
    const { verify } = await argon2();
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  const { verify } = await argon2();
  return verify(phc, password).catch(() => false);
}

// The most common passwords of 12 characters or more in public breach lists (a short list by
// design: length is the main rule; a long list belongs to a breach-check service).
const COMMON = new Set([
  '123456789012',
  '1234567890123',
  '12345678901234',
  '123456789123',
  '1q2w3e4r5t6y',
  '1qaz2wsx3edc',
  'qwertyuiopas',
  'qwertyuiop123',
  'qwerty123456',
  'qwertyqwerty',
  'password1234',
  'password12345',
  'password123456',
  'passwordpassword',
  'passw0rd1234',
  'iloveyou1234',
  'abc123456789',
  'abcdefghijkl',
  'abcd12345678',
  'aaaaaaaaaaaa',
  '111111111111',
  '000000000000',
  '987654321098',
  'administrator',
  'administrator1',
  'letmein12345',
  'welcome12345',
  'welcome123456',
  'changeme1234',
  'monkey123456',
  'football1234',
  'baseball1234',
  'sunshine1234',
  'princess1234',
  'superman1234',
  'trustno11234',
  'zaq12wsxcde3',
  '1q2w3e4r5t6y7u',
  'asdfghjkl123',
  'zxcvbnm12345',
  'qazwsxedcrfv',
  'mypassword123',
  'correcthorsebatterystaple',
]);

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string, context: { email?: string | null } = {}): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `The password must be at least ${MIN_PASSWORD_LENGTH} characters long`;
  if (password.length > MAX_PASSWORD_LENGTH) return `The password must be at most ${MAX_PASSWORD_LENGTH} characters long`;
  const lower = password.toLowerCase();
  if (COMMON.has(lower) || /^(.)\1+$/.test(password)) return 'This password is too common; choose another one';
  if (context.email && lower.includes(context.email.toLowerCase().split('@')[0]) && context.email.split('@')[0].length >= 4) {
    return 'The password must not contain your e-mail address';
  }
  return undefined;
}
