import {expect} from '@loopback/testlab';
import {cached, Metrics} from '../../metrics/metrics';

describe('scrape-time metric reads', () => {
  it('answer a scrape within the read timeout when a dependency hangs, keeping the last value', async () => {
    const metrics = new Metrics(new Set(['consumer']), {version: 't'}, 100);
    const errors: string[] = [];
    let hang = false;
    metrics.onScrape(
      'failedTasksStored',
      async gauge => {
        if (hang) await new Promise(() => undefined);
        gauge.set(7);
      },
      error => errors.push(error.message),
    );
    expect((await metrics.text()).body).to.match(
      /task_scheduler_failed_tasks_stored 7/,
    );
    hang = true;
    const started = Date.now();
    const {body} = await metrics.text();
    expect(Date.now() - started).to.be.below(1000);
    expect(body).to.match(/task_scheduler_failed_tasks_stored 7/);
    expect(errors).to.deepEqual(['no answer within 100 ms']);
  });

  it('share one read between scrapes inside the cache time, and ask again after a failure', async () => {
    let reads = 0;
    let fail = false;
    const read = cached(60_000, async () => {
      reads++;
      if (fail) throw new Error('down');
      return reads;
    });
    expect(await Promise.all([read(), read(), read()])).to.deepEqual([1, 1, 1]);
    expect(reads).to.equal(1);
    const fresh = cached(0, async () => {
      reads++;
      if (fail) throw new Error('down');
      return reads;
    });
    fail = true;
    await expect(fresh()).to.be.rejectedWith('down');
    fail = false;
    expect(await fresh()).to.equal(3);
  });

  it('render once for scrapes that arrive together, so 100 parallel scrapes cost one render and one read', async () => {
    const metrics = new Metrics(new Set(['consumer']), {version: 't'});
    let reads = 0;
    const errors: string[] = [];
    let fail = false;
    metrics.onScrape(
      'failedTasksStored',
      async gauge => {
        reads++;
        await new Promise(resolve => setTimeout(resolve, 20));
        if (fail) throw new Error('down');
        gauge.set(reads);
      },
      error => errors.push(error.message),
    );
    const bodies = await Promise.all(
      Array.from({length: 100}, () => metrics.text()),
    );
    expect(reads).to.equal(1);
    expect(new Set(bodies.map(({body}) => body)).size).to.equal(1);
    // A later scrape renders anew and sees new values.
    expect((await metrics.text()).body).to.match(
      /task_scheduler_failed_tasks_stored 2/,
    );
    fail = true;
    await Promise.all(Array.from({length: 100}, () => metrics.text()));
    expect(errors).to.deepEqual(['down']);
  });
});
