import type { FastifyRequest } from 'fastify';

/** A form field as one trimmed-or-not string ('' when absent; the first value when repeated). Forms carry no schema: every page checks its fields through the services' rules. */
export function field(request: FastifyRequest, name: string, opts: { trim?: boolean; max?: number } = {}): string {
  const body = request.body as Record<string, unknown> | undefined;
  let value = body && typeof body === 'object' ? body[name] : undefined;
  if (Array.isArray(value)) value = value[0];
  if (typeof value !== 'string') return '';
  const max = opts.max ?? 10_000;
  const v = value.length > max ? value.slice(0, max) : value;
  return opts.trim === false ? v : v.trim();
}

/** A query-string parameter as one string ('' when absent). */
export function queryParam(request: FastifyRequest, name: string): string {
  const q = request.query as Record<string, unknown> | undefined;
  let value = q ? q[name] : undefined;
  if (Array.isArray(value)) value = value[0];
  return typeof value === 'string' ? value : '';
}

/** The client's base URL (scheme and host) for links in invites, unless PUBLIC_BASE_URL says otherwise. */
export function baseUrlOf(request: FastifyRequest, publicBaseUrl: string | undefined): string {
  return publicBaseUrl ?? `${request.protocol}://${request.host}`;
}
