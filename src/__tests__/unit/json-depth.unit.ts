import {expect} from '@loopback/testlab';
import {assertJsonDepth, JsonTooDeepError} from '../../middleware/json-depth';

const depthOf = (text: string, max: number) => () =>
  assertJsonDepth(Buffer.from(text), max);

describe('assertJsonDepth', () => {
  it('passes nesting up to the limit and refuses one level more', () => {
    expect(depthOf('{"a":[{"b":1}]}', 3)).to.not.throw();
    expect(depthOf('{"a":[{"b":[1]}]}', 3)).to.throw(JsonTooDeepError);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(depthOf('{"a":"[[[[{{{{"}', 1)).to.not.throw();
    expect(depthOf('{"a":"\\"[[[[\\\\","b":"]]"}', 1)).to.not.throw();
    expect(depthOf('["\\\\",[[1]]]', 2)).to.throw(/deeper than 2 levels/);
  });

  it('counts siblings by their own depth, not their sum', () => {
    expect(depthOf('[[1],[2],[3],{"x":[4]}]', 3)).to.not.throw();
  });
});
