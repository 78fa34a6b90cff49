import {expect} from '@loopback/testlab';
import {redactEchoedSecrets} from '../../outbound/redact-echoed-secrets';

describe('redactEchoedSecrets (unit, issue 27 review)', () => {
  it('redacts the whole value, its credential part and their JSON-escaped forms', () => {
    const secret = 'Bearer ab"c\\def-123';
    const body = [
      secret,
      'ab"c\\def-123',
      JSON.stringify({authorization: secret}),
    ].join(' | ');
    const redacted = redactEchoedSecrets(body, [secret]);
    expect(redacted).to.not.match(/def-123/);
    expect(redacted).to.equal(
      '[redacted] | [redacted] | {"authorization":"[redacted]"}',
    );
  });

  it('leaves short values alone: they would redact ordinary text', () => {
    expect(redactEchoedSecrets('ok yes', ['yes'])).to.equal('ok yes');
  });
});
