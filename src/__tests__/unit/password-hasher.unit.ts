import {expect} from '@loopback/testlab';
import {
  DUMMY_PASSWORD_HASH,
  hashPassword,
  verifyPassword,
} from '../../auth/password-hasher';

describe('password hashing (scrypt)', () => {
  it('stores scheme, parameters, salt and hash, never the password', async () => {
    const hash = await hashPassword('s3cret-password');
    expect(hash).to.match(
      /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/,
    );
    expect(hash).to.not.containEql('s3cret-password');
  });

  it('verifies the right password and refuses others', async () => {
    const hash = await hashPassword('s3cret-password');
    expect(await verifyPassword('s3cret-password', hash)).to.be.true();
    expect(await verifyPassword('s3cret-passwordX', hash)).to.be.false();
    expect(await verifyPassword('', hash)).to.be.false();
  });

  it('salts every hash', async () => {
    expect(await hashPassword('same')).to.not.equal(await hashPassword('same'));
  });

  it('refuses malformed stored hashes and the dummy hash', async () => {
    expect(await verifyPassword('x', 'plain-text')).to.be.false();
    expect(await verifyPassword('x', 'bcrypt$1$2$3$a$b')).to.be.false();
    expect(await verifyPassword('anything', DUMMY_PASSWORD_HASH)).to.be.false();
  });
});
