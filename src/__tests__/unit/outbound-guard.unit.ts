import {expect} from '@loopback/testlab';
import {Webhook} from 'standardwebhooks';
import {
  judgeAddress,
  NOTHING_ALLOWED,
  parseOutboundAllow,
} from '../../outbound/address-policy';
import {
  isSuccessStatus,
  successStatusProblems,
} from '../../outbound/success-status';
import {
  newSigningSecret,
  webhookHeaders,
} from '../../outbound/webhook-signature';
import {loadConfig} from '../../config';

describe('SSRF guard address policy (unit)', () => {
  const refused: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['fd00::1', 'uniqueLocal'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['255.255.255.255', 'broadcast'],
  ];
  for (const [address, rule] of refused) {
    it(`refuses ${address} as ${rule}`, () => {
      const verdict = judgeAddress(address, address, NOTHING_ALLOWED);
      expect(verdict).to.containDeep({allowed: false, rule});
      if (!verdict.allowed) {
        expect(verdict.reason).to.match(new RegExp(`is a ${rule} address`));
      }
    });
  }

  // ipaddr.js calls these 'unicast', yet none is in 2000::/3, the only
  // global unicast IPv6 space: the deprecated IPv4-compatible form of
  // 127.0.0.1 (routed to it where an old-style sit tunnel is up) and
  // IETF-reserved space (issue 27 review).
  for (const address of ['::127.0.0.1', '::7f00:1', '::a00:1', '4000::1']) {
    it(`refuses ${address}: IPv6 outside 2000::/3 is not global`, () => {
      // (ipaddr.js reads '::127.0.0.1' as IPv4-mapped: refused as loopback.)
      expect(judgeAddress(address, address, NOTHING_ALLOWED)).to.containDeep({
        allowed: false,
      });
    });
  }

  it('lets global unicast addresses through', () => {
    for (const address of [
      '93.184.215.14',
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      '::ffff:8.8.8.8',
    ]) {
      expect(judgeAddress(address, 'example.com', NOTHING_ALLOWED)).to.eql({
        allowed: true,
      });
    }
  });

  it('reads an IPv4-mapped OUTBOUND_ALLOW range as the IPv4 range it maps', () => {
    // ::ffff:10.0.0.0/104 is 10.0.0.0/8, not the single address 10.0.0.0.
    const allow = parseOutboundAllow('::ffff:10.0.0.0/104');
    expect(judgeAddress('10.1.2.3', 'x', allow)).to.containDeep({
      allowed: true,
      openedBy: '::ffff:10.0.0.0/104',
    });
    expect(judgeAddress('11.0.0.1', 'x', allow)).to.containDeep({
      allowed: true,
    });
    expect(judgeAddress('192.168.1.1', 'x', allow)).to.containDeep({
      allowed: false,
      rule: 'private',
    });
  });

  it('opens addresses, ranges and host names that OUTBOUND_ALLOW lists', () => {
    const allow = parseOutboundAllow(
      '127.0.0.2, 10.20.0.0/16, fd12::/16, Internal.Example.',
    );
    expect(judgeAddress('127.0.0.2', '127.0.0.2', allow)).to.eql({
      allowed: true,
      openedBy: '127.0.0.2',
    });
    expect(judgeAddress('::ffff:127.0.0.2', 'x', allow)).to.containDeep({
      allowed: true,
    });
    expect(judgeAddress('10.20.3.4', 'x', allow)).to.containDeep({
      allowed: true,
      openedBy: '10.20.0.0/16',
    });
    expect(judgeAddress('fd12::5', 'x', allow)).to.containDeep({
      allowed: true,
    });
    expect(
      judgeAddress('192.168.1.1', 'internal.example.com', allow),
    ).to.containDeep({allowed: false, rule: 'private'});
    expect(
      judgeAddress('192.168.1.1', 'internal.example', allow),
    ).to.containDeep({allowed: true, openedBy: 'internal.example'});
    expect(judgeAddress('127.0.0.1', '127.0.0.1', allow)).to.containDeep({
      allowed: false,
      rule: 'loopback',
    });
    expect(judgeAddress('10.21.0.1', 'x', allow)).to.containDeep({
      allowed: false,
      rule: 'private',
    });
  });

  it('refuses an OUTBOUND_ALLOW entry that is neither address, range nor name', () => {
    for (const bad of ['10.0.0.0/40', 'http://x', 'a b', '-bad-.com']) {
      expect(() => loadConfig({OUTBOUND_ALLOW: bad})).to.throw(
        /OUTBOUND_ALLOW must list addresses, CIDR ranges or host names/,
      );
    }
    expect(loadConfig({OUTBOUND_ALLOW: ''}).httpTasks.outboundAllow).to.eql(
      NOTHING_ALLOWED,
    );
  });
});

describe('HTTP target success status (unit)', () => {
  it('takes codes and ranges, and never a redirect', () => {
    expect(isSuccessStatus(200, '200-299')).to.be.true();
    expect(isSuccessStatus(299, '200-299')).to.be.true();
    expect(isSuccessStatus(300, '200-299')).to.be.false();
    expect(isSuccessStatus(404, '200,404')).to.be.true();
    expect(isSuccessStatus(201, '200,204-206')).to.be.false();
    expect(isSuccessStatus(302, '200-399')).to.be.false();
  });

  it('names specs that make no sense', () => {
    expect(successStatusProblems('200-299')).to.eql([]);
    expect(successStatusProblems('299-200')).to.eql([
      'success_status range 299-200 runs backwards',
    ]);
    expect(successStatusProblems('2xx')).to.have.length(1);
  });
});

describe('Standard Webhooks signatures (unit)', () => {
  const body = JSON.stringify({hello: 'world'});

  it('verifies with the reference standardwebhooks package', () => {
    const secret = newSigningSecret();
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const headers = webhookHeaders([secret], 'run_1_cron-x', new Date(), body);
    expect(new Webhook(secret).verify(body, headers)).to.eql({hello: 'world'});
    expect(() =>
      new Webhook(newSigningSecret()).verify(body, headers),
    ).to.throw(/No matching signature found/);
    expect(() => new Webhook(secret).verify(body + ' ', headers)).to.throw(
      /No matching signature found/,
    );
  });

  it('signs with both secrets during a rotation', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const headers = webhookHeaders([current, previous], 'id', new Date(), body);
    expect(headers['webhook-signature'].split(' ')).to.have.length(2);
    for (const secret of [current, previous]) {
      expect(new Webhook(secret).verify(body, headers)).to.eql({
        hello: 'world',
      });
    }
  });
});
