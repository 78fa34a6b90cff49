import {lookup as dnsLookup, LookupAddress, LookupOptions} from 'node:dns';
import {isIP} from 'node:net';
import {judgeAddress, OutboundAllow} from './address-policy';

/** An outbound request the SSRF guard refused; `rule` names the range. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(message);
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request: resolves the name, then judges every address
 * the socket may connect to. One refused address refuses the request, so a
 * name that answers both a public and a private address cannot be used to
 * reach the private one.
 */
export function guardedLookup(allow: OutboundAllow) {
  return (
    hostname: string,
    options: LookupOptions,
    callback: LookupCallback,
  ): void => {
    dnsLookup(
      hostname,
      {...options, all: true},
      (error, addresses: LookupAddress[]) => {
        if (error) return callback(error, []);
        for (const {address} of addresses) {
          const verdict = judgeAddress(address, hostname, allow);
          if (!verdict.allowed) {
            return callback(
              Object.assign(new OutboundRefused(verdict.rule, verdict.reason), {
                code: 'EOUTBOUNDREFUSED',
              }),
              [],
            );
          }
        }
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0].address, addresses[0].family);
      },
    );
  };
}

/**
 * Node connects to a literal address without calling `lookup`: such a host
 * (after WHATWG URL parsing, which turns 2130706433 into 127.0.0.1) is
 * judged here instead.
 */
export function assertLiteralAllowed(
  hostname: string,
  allow: OutboundAllow,
): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (!isIP(bare)) return;
  const verdict = judgeAddress(bare, bare, allow);
  if (!verdict.allowed) throw new OutboundRefused(verdict.rule, verdict.reason);
}
