import {expect} from '@loopback/testlab';
import debug from 'debug';
import {settleDebugColours} from '../../logging/debug-colours';

describe('settleDebugColours', () => {
  it('asks once whether stderr is a terminal, and every debug function made later uses that answer', () => {
    const options: Record<string, unknown> = {};
    let asked = 0;
    settleDebugColours(options, () => {
      asked++;
      return true;
    });
    expect(options).to.eql({colors: true});
    expect(asked).to.equal(1);
  });

  it('leaves a DEBUG_COLORS setting alone', () => {
    const options: Record<string, unknown> = {colors: false};
    settleDebugColours(options, () => true);
    expect(options).to.eql({colors: false});
  });

  it('is what the debug package reads: a function made after it takes the settled colours without asking', () => {
    const shared = (debug as unknown as {inspectOpts: Record<string, unknown>})
      .inspectOpts;
    const before = {...shared};
    const made = () =>
      (debug('task-scheduler:test') as unknown as {useColors: boolean})
        .useColors;
    try {
      delete shared.colors;
      settleDebugColours(shared, () => true);
      expect(made()).to.be.true();
      shared.colors = false;
      expect(made()).to.be.false();
    } finally {
      for (const key of Object.keys(shared)) delete shared[key];
      Object.assign(shared, before);
    }
  });
});
