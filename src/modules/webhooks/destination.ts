import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Where webhooks may go (SSRF protection). Loopback, private, carrier-grade NAT, link-local (cloud
 * metadata: 169.254.169.254, fd00:ec2::254), unspecified, multicast, reserved and documentation ranges
 * are refused, IPv4-mapped and NAT64 IPv6 forms included, unless WEBHOOK_ALLOW_PRIVATE=true. Names are
 * resolved at send time and the connection goes to the address that was checked (a custom lookup), so a
 * DNS answer that changes between the check and the connect (rebinding) cannot swap it.
 */

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback (::1) and the deprecated IPv4-compatible form
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (fd00:ec2::254 is AWS's metadata service)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

/** The IPv4 address embedded in an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address. */
function embeddedIpv4(ipv6: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(ipv6);
  if (!m) return undefined;
  if (m[1]) return m[1];
  const hi = Number.parseInt(m[2], 16);
  const lo = Number.parseInt(m[3], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why an address is refused (e.g. "loopback or private"), or undefined when it is a public unicast address. */
export function forbiddenAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4') ? `${address} is a loopback, private, link-local or reserved address` : undefined;
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return forbiddenAddress(v4) && `${address} maps to ${v4}, a loopback, private, link-local or reserved address`;
    return blocked.check(address, 'ipv6') ? `${address} is a loopback, private, link-local or reserved address` : undefined;
  }
  return `${address} is not an IP address`;
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;
export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export class DestinationRefused extends Error {}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Resolves the host and checks every address it resolves to (one bad address refuses the name, so
 * the connection cannot land on it). Returns the addresses to connect to.
 */
export async function checkDestination(
  url: URL,
  allowPrivate: boolean,
  resolve: Resolver = systemResolver,
): Promise<Array<{ address: string; family: number }>> {
  const host = hostOf(url);
  if (isIP(host)) {
    const why = allowPrivate ? undefined : forbiddenAddress(host);
    if (why) throw new DestinationRefused(`destination refused: ${why}`);
    return [{ address: host, family: isIP(host) }];
  }
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await resolve(host);
  } catch (err) {
    throw new DestinationRefused(`cannot resolve ${host}: ${(err as { code?: string }).code ?? (err as Error).message}`);
  }
  if (addresses.length === 0) throw new DestinationRefused(`cannot resolve ${host}`);
  if (!allowPrivate) {
    for (const a of addresses) {
      const why = forbiddenAddress(a.address);
      if (why) throw new DestinationRefused(`destination refused: ${host} resolves to ${why.replace(/^\S+ /, `${a.address} `)}`);
    }
  }
  return addresses;
}

/** A lookup for node:http that answers only the addresses already checked (no second DNS query to rebind). */
export function pinnedLookup(addresses: Array<{ address: string; family: number }>): LookupFunction {
  return (_hostname, options, callback) => {
    const opts = options as { all?: boolean; family?: number };
    const usable = opts.family === 4 || opts.family === 6 ? addresses.filter((a) => a.family === opts.family) : addresses;
    const list = usable.length > 0 ? usable : addresses;
    if (opts.all) (callback as unknown as (e: null, a: typeof list) => void)(null, list);
    else callback(null, list[0].address, list[0].family);
  };
}
