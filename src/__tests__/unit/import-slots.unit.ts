import {expect} from '@loopback/testlab';
import {ImportsBusyError, ImportSlots} from '../../calendars/import-slots';

/** A task that runs until `finish` is called. */
function held() {
  let finish!: () => void;
  const done = new Promise<void>(resolve => (finish = resolve));
  return {finish, task: () => done};
}

const settle = () => new Promise(resolve => setImmediate(resolve));

describe('ImportSlots (review of issue 26: import workers are bounded)', () => {
  it('runs at most the limit at once and starts the next when one ends', async () => {
    const slots = new ImportSlots(2);
    const started: number[] = [];
    const tasks = [held(), held(), held(), held()];
    const runs = tasks.map((t, i) =>
      slots.run(async () => {
        started.push(i);
        await t.task();
        return i;
      }),
    );
    await settle();
    expect(started).to.deepEqual([0, 1]);
    tasks[1].finish();
    await settle();
    expect(started).to.deepEqual([0, 1, 2]);
    tasks[0].finish();
    tasks[2].finish();
    tasks[3].finish();
    expect(await Promise.all(runs)).to.deepEqual([0, 1, 2, 3]);
  });

  it('frees the slot when a task fails', async () => {
    const slots = new ImportSlots(1);
    await slots
      .run(() => Promise.reject(new Error('boom')))
      .catch(() => undefined);
    expect(await slots.run(() => Promise.resolve('next'))).to.equal('next');
  });

  it('refuses a task at once when as many wait as may (review: every import waited behind hostile ones)', async () => {
    const slots = new ImportSlots(1, 2);
    const tasks = [held(), held(), held()];
    const runs = tasks.map(t => slots.run(t.task));
    await settle();
    await expect(slots.run(() => Promise.resolve(1))).to.be.rejectedWith(
      ImportsBusyError,
    );
    for (const t of tasks) t.finish();
    await Promise.all(runs);
    // Room again once they ended.
    expect(await slots.run(() => Promise.resolve(7))).to.equal(7);
  });

  it("refuses an owner's task beyond their share as their own, and lets others in", async () => {
    const slots = new ImportSlots(1, 4, 2);
    const tasks = [held(), held()];
    const runs = tasks.map(t => slots.run(t.task, 'user:1'));
    await settle();
    const refused = await slots
      .run(() => Promise.resolve(1), 'user:1')
      .catch((error: ImportsBusyError) => error);
    expect(refused).to.be.instanceOf(ImportsBusyError);
    expect((refused as ImportsBusyError).own).to.be.true();
    const other = slots.run(() => Promise.resolve(2), 'user:2');
    for (const t of tasks) t.finish();
    await Promise.all(runs);
    expect(await other).to.equal(2);
    // Their share is free again once theirs ended.
    expect(await slots.run(() => Promise.resolve(3), 'user:1')).to.equal(3);
  });
});
