import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * OUTBOUND_ALLOW, parsed: the private targets an operator opened on purpose.
 * Entries are addresses, CIDR ranges or host names.
 */
export interface OutboundAllow {
  ranges: Array<{text: string; range: [Address, number]}>;
  hosts: ReadonlySet<string>;
}

export const NOTHING_ALLOWED: OutboundAllow = {ranges: [], hosts: new Set()};

/** A host name as DNS takes it: labels of letters, digits and hyphens. */
const HOST_NAME =
  /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * Parses a comma-separated OUTBOUND_ALLOW value. Throws an Error naming the
 * first entry that is neither an address, a range nor a host name.
 */
export function parseOutboundAllow(raw: string): OutboundAllow {
  const ranges: OutboundAllow['ranges'] = [];
  const hosts = new Set<string>();
  for (const entry of raw
    .split(',')
    .map(part => part.trim())
    .filter(Boolean)) {
    if (entry.includes('/')) {
      try {
        const [address, bits] = ipaddr.parseCIDR(entry);
        const judged = unmapped(address);
        // ::ffff:10.0.0.0/104 is 10.0.0.0/8: the mapped prefix is 96 bits.
        const judgedBits = judged === address ? bits : Math.max(0, bits - 96);
        ranges.push({text: entry, range: [judged, judgedBits]});
        continue;
      } catch {
        throw new Error(`"${entry}" is not a CIDR range`);
      }
    }
    if (ipaddr.isValid(entry)) {
      const address = unmapped(ipaddr.parse(entry));
      const bits = address.kind() === 'ipv4' ? 32 : 128;
      ranges.push({text: entry, range: [address, bits]});
      continue;
    }
    const host = entry.toLowerCase().replace(/\.$/, '');
    if (!HOST_NAME.test(host)) {
      throw new Error(
        `"${entry}" is neither an address, a CIDR range nor a host name`,
      );
    }
    hosts.add(host);
  }
  return {ranges, hosts};
}

/** An IPv4-mapped IPv6 address is judged as the IPv4 address it maps to. */
function unmapped(address: Address): Address {
  if (
    address.kind() === 'ipv6' &&
    (address as ipaddr.IPv6).isIPv4MappedAddress()
  ) {
    return (address as ipaddr.IPv6).toIPv4Address();
  }
  return address;
}

/** The only global unicast IPv6 space (RFC 4291 2.4); the rest is reserved. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/**
 * ipaddr.js's range name, except that an IPv6 address it calls 'unicast'
 * outside 2000::/3 (the IPv4-compatible ::127.0.0.1, IETF-reserved space)
 * is 'notGlobalUnicast': such an address may still reach an IPv4 one.
 */
function globalRange(address: Address): string {
  const range = address.range();
  if (
    range === 'unicast' &&
    address.kind() === 'ipv6' &&
    !(address as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)
  ) {
    return 'notGlobalUnicast';
  }
  return range;
}

export type AddressVerdict =
  | {allowed: true; openedBy?: string}
  | {allowed: false; rule: string; reason: string};

/**
 * Judges the address a socket is about to connect to (after DNS). Only
 * global unicast addresses pass; every other range ipaddr.js names
 * (loopback, private, linkLocal, carrierGradeNat, multicast, unspecified,
 * uniqueLocal, reserved, broadcast, ...) is refused unless OUTBOUND_ALLOW
 * lists the address, a range holding it, or the host name it came from.
 */
export function judgeAddress(
  text: string,
  host: string,
  allow: OutboundAllow,
): AddressVerdict {
  if (!ipaddr.isValid(text)) {
    return {
      allowed: false,
      rule: 'invalid',
      reason: `"${text}" is not an IP address`,
    };
  }
  const parsed = ipaddr.parse(text);
  const address = unmapped(parsed);
  const range = globalRange(address);
  if (range === 'unicast') return {allowed: true};
  const name = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  if (allow.hosts.has(name)) return {allowed: true, openedBy: name};
  for (const entry of allow.ranges) {
    if (
      address.kind() === entry.range[0].kind() &&
      address.match(entry.range as [never, number])
    ) {
      return {allowed: true, openedBy: entry.text};
    }
  }
  const shown =
    address === parsed
      ? address.toString()
      : `${parsed.toString()} (IPv4-mapped ${address.toString()})`;
  return {
    allowed: false,
    rule: range,
    reason: `SSRF guard: ${shown} is a ${range} address; OUTBOUND_ALLOW does not open it`,
  };
}
