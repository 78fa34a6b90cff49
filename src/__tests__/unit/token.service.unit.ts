import {expect} from '@loopback/testlab';
import jwt from 'jsonwebtoken';
import {TokenService} from '../../auth/token.service';
import type {JwtConfig} from '../../config';

const CONFIG: JwtConfig = {
  secret: 'unit-test-secret-unit-test-secret-0123',
  ttlSeconds: 3600,
  issuer: 'task-scheduler',
  audience: 'task-scheduler-api',
};
const NOW = new Date('2026-11-21T12:00:00Z');
const base64url = (value: object) =>
  Buffer.from(JSON.stringify(value)).toString('base64url');

function signed(
  payload: object,
  options: jwt.SignOptions = {},
  secret = CONFIG.secret!,
) {
  return jwt.sign(payload, secret, {
    algorithm: 'HS256',
    issuer: CONFIG.issuer,
    audience: CONFIG.audience,
    ...options,
  });
}

function rejects(service: TokenService, token: string) {
  let thrown: unknown;
  try {
    service.verify(token);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).to.containDeep({statusCode: 401, name: 'UnauthorizedError'});
}

describe('TokenService', () => {
  const service = new TokenService(CONFIG, () => NOW);
  const nowSeconds = NOW.getTime() / 1000;

  it('moves iat past a revocation made in the same second', () => {
    const revokedAt = new Date(NOW.getTime() + 300);
    const claims = service.verify(service.issue(42, revokedAt).token);
    expect(claims.issuedAt.getTime()).to.be.greaterThan(revokedAt.getTime());
    // A revocation long ago (or none: -infinity) leaves iat at the clock.
    expect(
      service.verify(service.issue(42, new Date('2020-01-01')).token).issuedAt,
    ).to.deepEqual(NOW);
  });

  it('issues a token that expires after JWT_TTL and verifies back to the user', () => {
    const issued = service.issue(42);
    expect(issued.expires_at).to.equal('2026-11-21T13:00:00.000Z');
    const claims = service.verify(issued.token);
    expect(claims).to.containDeep({
      userId: 42,
      expiresAt: new Date('2026-11-21T13:00:00.000Z'),
      issuedAt: new Date('2026-11-21T12:00:00.000Z'),
    });
    // Every token has its own id, for signing it out alone.
    expect(claims.tokenId).to.match(/^[0-9a-f-]{36}$/);
    expect(service.verify(service.issue(42).token).tokenId).to.not.equal(
      claims.tokenId,
    );
    const header = JSON.parse(
      Buffer.from(issued.token.split('.')[0], 'base64url').toString(),
    );
    expect(header.alg).to.equal('HS256');
  });

  it('refuses a token once it has expired, using the injected clock', () => {
    const issued = service.issue(1);
    const later = new TokenService(
      CONFIG,
      () => new Date(NOW.getTime() + 3601_000),
    );
    rejects(later, issued.token);
  });

  it('tells verified claims current until the second their token expires, as verify does', () => {
    const claims = service.verify(service.issue(1).token);
    const at = (ms: number) =>
      new TokenService(CONFIG, () => new Date(NOW.getTime() + ms));
    expect(at(3599_999).isCurrent(claims)).to.be.true();
    expect(at(3600_000).isCurrent(claims)).to.be.false();
    // verify agrees at both instants.
    expect(at(3599_999).verify(service.issue(1).token).userId).to.equal(1);
    rejects(at(3600_000), service.issue(1).token);
  });

  it('refuses alg none', () => {
    const payload = {
      sub: '1',
      iat: nowSeconds,
      exp: nowSeconds + 60,
      iss: CONFIG.issuer,
      aud: CONFIG.audience,
    };
    rejects(
      service,
      `${base64url({alg: 'none', typ: 'JWT'})}.${base64url(payload)}.`,
    );
  });

  it('refuses a token signed with another secret', () => {
    rejects(
      service,
      signed(
        {sub: '1', exp: nowSeconds + 60},
        {},
        'another-secret-another-secret-another',
      ),
    );
  });

  it('refuses a token without exp', () => {
    rejects(service, signed({sub: '1', iat: nowSeconds}));
  });

  it('refuses the wrong issuer or audience', () => {
    rejects(
      service,
      signed({sub: '1', exp: nowSeconds + 60}, {issuer: 'someone-else'}),
    );
    rejects(
      service,
      signed({sub: '1', exp: nowSeconds + 60}, {audience: 'other-api'}),
    );
  });

  it('refuses a tampered payload', () => {
    const [header, , signature] = service.issue(1).token.split('.');
    const forged = base64url({
      sub: '2',
      exp: nowSeconds + 60,
      iss: CONFIG.issuer,
      aud: CONFIG.audience,
    });
    rejects(service, `${header}.${forged}.${signature}`);
  });

  it('refuses a subject that is not a user id', () => {
    rejects(service, signed({sub: 'admin', exp: nowSeconds + 60}));
    rejects(service, signed({exp: nowSeconds + 60}));
  });

  it('refuses garbage', () => {
    rejects(service, 'not-a-jwt');
    rejects(service, 'a.b.c');
  });

  it('refuses a token without iat, even with a valid exp', () => {
    rejects(
      service,
      signed({sub: '1', exp: nowSeconds + 60}, {noTimestamp: true}),
    );
  });

  it('refuses a token issued longer ago than JWT_TTL, whatever its exp says', () => {
    rejects(
      service,
      signed({
        sub: '1',
        iat: nowSeconds - 3601,
        exp: nowSeconds + 10 * 365 * 86400,
      }),
    );
  });

  it('refuses a token whose lifetime exceeds JWT_TTL or that is issued in the future', () => {
    rejects(
      service,
      signed({sub: '1', iat: nowSeconds, exp: nowSeconds + 10 * 365 * 86400}),
    );
    rejects(
      service,
      signed({sub: '1', iat: nowSeconds + 3000, exp: nowSeconds + 3600}),
    );
  });

  it('loads the installation secret once, and again after a failed attempt', async () => {
    const answers = [
      () => Promise.reject(new Error('database down')),
      () => Promise.resolve('loaded-secret-loaded-secret-loaded-secret'),
    ];
    let calls = 0;
    const lazy = new TokenService(
      {...CONFIG, secret: undefined},
      () => NOW,
      () => answers[calls++](),
    );
    await expect(lazy.ensureSecret()).to.be.rejectedWith('database down');
    await lazy.ensureSecret();
    await lazy.ensureSecret();
    expect(calls).to.equal(2);
    expect(lazy.verify(lazy.issue(7).token).userId).to.equal(7);
  });
});
