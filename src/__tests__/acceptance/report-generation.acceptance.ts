import {expect} from '@loopback/testlab';
import {parse} from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import {mkdtemp, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import type {Response} from 'supertest';
import {ProducerBindings, ReportBindings} from '../../keys';
import type {ReportGenerationService} from '../../reports/report-generation.service';
import {TASK_QUEUE} from '../../queue/topology';
import {pdfText} from '../fixtures/pdf-text';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, givenTestConfig, TestApp} from '../fixtures/test-app';
import {drainQueue, resetBroker, withChannel} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {emailsOf, givenPeople, People} from '../fixtures/test-people';
import {
  attachmentOf,
  givenSmtpServer,
  TestSmtpServer,
} from '../fixtures/test-smtp';

/** The API's clock: 10:00 UTC on 21 November, so "yesterday" is the 20th. */
const NOW = new Date('2026-11-21T10:00:00Z');

function binary(
  res: Response,
  callback: (error: Error | null, body: Buffer) => void,
) {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => callback(null, Buffer.concat(chunks)));
}

describe('POST /reports/generate', () => {
  let given: TestApp;
  let team: Team;
  let people: People;
  let smtp: TestSmtpServer;
  let outbox: string;

  before(async () => {
    smtp = await givenSmtpServer();
    outbox = await mkdtemp(path.join(tmpdir(), 'report-api-outbox-'));
    const base = givenTestConfig();
    given = await givenRunningApp(
      {reports: {...base.reports, smtpUrl: smtp.url, mailOutboxDir: outbox}},
      app => {
        app.bind(ReportBindings.CLOCK).to(() => NOW);
        // Next runs too: the inventory's next run is compared with it, and
        // on the machine's clock it moves on after 2027-03-28 01:00 UTC.
        app.bind(ProducerBindings.CLOCK).to(() => NOW);
      },
    );
  });
  after(async () => {
    await given.app.stop();
    await smtp.close();
    await rm(outbox, {recursive: true, force: true});
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    smtp.received.length = 0;
    team = await givenTeam(given.app);
    people = await givenPeople();
    await sql(
      `INSERT INTO scheduler (description, schedule, report_id) VALUES ('nightly, "big"', '0 2 * * *', 1)`,
    );
    // Two runs yesterday (in the default period), one the day before (outside it).
    await sql(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, executed_at, container_id, status, attempts, duration_ms, last_error)
       VALUES (1, 'cron-2026-11-20-02-00', '2026-11-20T02:00:00Z', 'c', 'succeeded', 1, 1500, NULL),
              (1, 'cron-2026-11-20-23-59', '2026-11-20T23:59:00Z', 'c', 'failed', 4, 20, 'exit 3'),
              (1, 'cron-2026-11-19-02-00', '2026-11-19T02:00:00Z', 'c', 'succeeded', 1, 900, NULL)`,
    );
  });

  const operator = () => asUser(given.client, team.operator);

  function direct(format: string, filename = 'runs-{{yesterday}}') {
    return {
      controller: 'ExecutionsReport',
      options_interface: {
        delivery: {instant: true},
        output: {file: {type: 'Direct', format, filename}},
      },
    };
  }

  const EXPECTED_ROWS = [
    [
      '1',
      '1',
      'nightly, "big"',
      'cron-2026-11-20-02-00',
      'succeeded',
      '1',
      '2026-11-20T02:00:00.000Z',
      '',
      '1500',
      '',
    ],
    [
      '2',
      '1',
      'nightly, "big"',
      'cron-2026-11-20-23-59',
      'failed',
      '4',
      '2026-11-20T23:59:00.000Z',
      '',
      '20',
      'exit 3',
    ],
  ];

  it('returns an instant Direct CSV report as a file, yesterday by default', async () => {
    const res = await operator()
      .post('/api/reports/generate')
      .send(direct('CSV'))
      .expect(200);
    expect(res.headers['content-type']).to.equal('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).to.equal(
      'attachment; filename="runs-2026-11-20.csv"',
    );
    expect(res.headers['x-report-rows']).to.equal('2');
    const records: string[][] = parse(res.text);
    expect(records[0]).to.containEql('Status');
    expect(records.slice(1)).to.deepEqual(EXPECTED_ROWS);
  });

  it('returns Excel and PDF files with their content types and the same rows', async () => {
    const xlsx = await operator()
      .post('/api/reports/generate')
      .send(direct('Excel'))
      .buffer(true)
      .parse(binary)
      .expect(200);
    expect(xlsx.headers['content-type']).to.equal(
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    );
    expect(xlsx.headers['content-disposition']).to.match(
      /filename="runs-2026-11-20.xlsx"/,
    );
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx.body);
    const sheet = workbook.worksheets[0];
    expect(sheet.rowCount).to.equal(3);
    expect(sheet.getRow(3).getCell(5).value).to.equal('failed');
    expect(sheet.getRow(3).getCell(10).value).to.equal('exit 3');

    const pdf = await operator()
      .post('/api/reports/generate')
      .send(direct('PDF', 'runs'))
      .buffer(true)
      .parse(binary)
      .expect(200);
    expect(pdf.headers['content-type']).to.equal('application/pdf');
    expect(pdf.headers['content-disposition']).to.equal(
      'attachment; filename="runs.pdf"',
    );
    const {text} = await pdfText(pdf.body);
    expect(text).to.match(/cron-2026-11-20-23-59/);
    expect(text).to.not.match(/cron-2026-11-19-02-00/);
  });

  it('sanitises the requested file name', async () => {
    const res = await operator()
      .post('/api/reports/generate')
      .send(direct('CSV', '../../etc/passwd\u0000{{user_id}}'))
      .expect(200);
    expect(res.headers['content-disposition']).to.equal(
      `attachment; filename="etc_passwd${team.operator.id}.csv"`,
    );
  });

  it('delivers an instant Attachment by e-mail and web notification and describes the delivery', async () => {
    const res = await operator()
      .post('/api/reports/generate')
      .send({
        controller: 'ExecutionsReport',
        options_interface: {
          delivery: {
            instant: true,
            email: true,
            web_notification: true,
            deliver_to: {user_id: [people.dave], group_id: [people.groupId]},
          },
          output: {file: {type: 'Attachment', format: 'CSV', filename: 'runs'}},
        },
        report_params: {status: ['failed']},
      })
      .expect(200);
    expect(res.body).to.containDeep({
      status: 'delivered',
      report: 'ExecutionsReport',
      format: 'CSV',
      filename: 'runs.csv',
      rows: 1,
      deliveries: {
        email: {transport: 'smtp', recipients: 3},
        web_notification: {notified_users: 3},
      },
    });
    expect(smtp.received).to.have.length(1);
    expect([...smtp.received[0].to].sort()).to.deepEqual(
      await emailsOf([people.alice, people.bob, people.dave]),
    );
    const csv = attachmentOf(smtp.received[0].raw, 'runs.csv').toString();
    expect(parse(csv).slice(1)).to.deepEqual([EXPECTED_ROWS[1]]);
    const [{count}] = await sql<{count: string}>(
      'SELECT count(*) FROM notification',
    );
    expect(count).to.equal('3');
  });

  it('answers an e-mail written to the outbox with its message id, never a path on the server', async () => {
    const base = givenTestConfig();
    const withoutSmtp = await givenRunningApp(
      {reports: {...base.reports, smtpUrl: undefined, mailOutboxDir: outbox}},
      app => app.bind(ReportBindings.CLOCK).to(() => NOW),
    );
    try {
      const res = await asUser(withoutSmtp.client, team.operator)
        .post('/api/reports/generate')
        .send({
          controller: 'ExecutionsReport',
          options_interface: {
            delivery: {
              instant: true,
              email: true,
              deliver_to: {user_id: [people.dave]},
            },
            output: {
              file: {type: 'Attachment', format: 'CSV', filename: 'runs'},
            },
          },
        })
        .expect(200);
      expect(res.body.deliveries.email).to.containDeep({
        transport: 'file',
        recipients: 1,
      });
      expect(res.body.deliveries.email.message_id).to.match(/^<.+@.+>$/);
      expect(res.body.deliveries.email).to.not.have.property('file');
      expect(res.text).to.not.containEql(outbox);
      expect(res.text).to.not.containEql('.eml');
    } finally {
      await withoutSmtp.app.stop();
    }
  });

  it('queues a non-instant report as a report task and answers 202 with the execution id', async () => {
    await sql(
      `UPDATE report SET controller = 'FailedTasksReport' WHERE id = 3`,
    );
    const body = {
      controller: 'FailedTasksReport',
      options_interface: {
        delivery: {
          web_notification: true,
          deliver_to: {group_id: [people.groupId]},
        },
        output: {
          file: {
            type: 'Attachment',
            format: 'PDF',
            filename: 'failed-{{date}}',
          },
        },
      },
      report_params: {from: '{{yesterday}}'},
    };
    const res = await operator()
      .post('/api/reports/generate')
      .send(body)
      .expect(202);
    expect(res.body).to.containDeep({status: 'queued'});
    expect(res.body.execution_key).to.match(/^manual-[0-9a-f-]{36}$/);
    const [execution] = await sql<Record<string, unknown>>(
      'SELECT e.status, s.status AS active, s.date_time, s.report_id, s.user_id FROM scheduler_execution e JOIN scheduler s ON s.id = e.scheduler_id WHERE e.id = $1',
      [res.body.execution_id],
    );
    expect(execution).to.containDeep({
      status: 'published',
      active: false,
      report_id: 3,
      user_id: team.operator.id,
    });
    const [message] = await drainQueue(TASK_QUEUE);
    expect(message.properties.headers?.['x-execution-id']).to.equal(
      res.body.execution_id,
    );
    const task = JSON.parse(message.content.toString());
    expect(task).to.containDeep({
      type: 'report',
      id: 3,
      scheduler_id: res.body.scheduler_id,
    });
    expect(JSON.parse(task.params_scheduler)).to.deepEqual(body);
  });

  it('keeps a queued report whose publish was not confirmed (202 pending), with its message stored for the sweeper', async () => {
    await withChannel(channel => channel.deleteQueue(TASK_QUEUE));
    const body = {
      controller: 'ExecutionsReport',
      options_interface: {delivery: {email: true}},
    };
    const res = await operator()
      .post('/api/reports/generate')
      .send(body)
      .expect(202);
    expect(res.body.status).to.equal('pending');
    const [run] = await sql<{status: string; payload: {type: string}}>(
      'SELECT status, payload FROM scheduler_execution WHERE id = $1',
      [res.body.execution_id],
    );
    expect(run.status).to.equal('claimed');
    expect(run.payload).to.containDeep({
      type: 'report',
      scheduler_id: res.body.scheduler_id,
    });
    await resetBroker();
  });

  /** A cheap report in the catalog that can be queued, and its request body. */
  async function givenQueueableReport() {
    await sql(`UPDATE report SET controller = 'SelfCheckReport' WHERE id = 3`);
    return {
      controller: 'SelfCheckReport',
      options_interface: {
        delivery: {web_notification: true},
        output: {file: {type: 'Attachment', format: 'CSV'}},
      },
    };
  }

  it('answers 429 with Retry-After once a user has REPORT_MAX_QUEUED_PER_USER reports waiting', async () => {
    const max = givenTestConfig().reports.maxQueuedPerUser;
    const body = await givenQueueableReport();
    for (let i = 0; i < max; i++) {
      await operator().post('/api/reports/generate').send(body).expect(202);
    }
    const res = await operator()
      .post('/api/reports/generate')
      .send(body)
      .expect(429);
    expect(res.headers['retry-after']).to.equal('60');
    expect(res.body.error.message).to.match(/REPORT_MAX_QUEUED_PER_USER/);
    // Another user is not held back, and a finished report frees a place.
    await asUser(given.client, team.admin)
      .post('/api/reports/generate')
      .send(body)
      .expect(202);
    await sql(
      `UPDATE scheduler_execution SET status = 'succeeded'
        WHERE id = (SELECT min(e.id) FROM scheduler_execution e
                      JOIN scheduler s ON s.id = e.scheduler_id
                     WHERE s.user_id = $1)`,
      [team.operator.id],
    );
    await operator().post('/api/reports/generate').send(body).expect(202);
  });

  it('holds REPORT_MAX_QUEUED_PER_USER against concurrent requests of one user', async () => {
    const max = givenTestConfig().reports.maxQueuedPerUser;
    const body = await givenQueueableReport();
    const answers = await Promise.all(
      Array.from({length: 10}, () =>
        operator().post('/api/reports/generate').send(body),
      ),
    );
    const statuses = answers.map(res => res.status);
    expect(statuses.filter(status => status === 202)).to.have.length(max);
    expect(statuses.filter(status => status === 429)).to.have.length(10 - max);
    const [{n}] = await sql<{n: number}>(
      `SELECT count(*)::int AS n FROM scheduler WHERE user_id = $1`,
      [team.operator.id],
    );
    expect(n).to.equal(max);
  });

  it('refuses to queue what cannot be delivered or run later', async () => {
    const queued = (options: object, controller = 'ExecutionsReport') =>
      operator()
        .post('/api/reports/generate')
        .send({controller, options_interface: options})
        .expect(422);
    // Direct needs the response: it cannot be queued.
    expect(
      (
        await queued({
          delivery: {web_notification: true},
          output: {file: {type: 'Direct'}},
        })
      ).body.error.message,
    ).to.match(/Direct output .*delivery.instant true/);
    // Attachment with no channel would go nowhere.
    expect(
      (await queued({delivery: {instant: true}})).body.error.message,
    ).to.match(/needs a delivery channel/);
    // No catalog report runs this controller.
    expect(
      (await queued({delivery: {email: true}}, 'SchedulerInventoryReport')).body
        .error.message,
    ).to.match(
      /No report in the catalog uses controller "SchedulerInventoryReport"/,
    );
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('answers 422 for an unknown controller, naming the known ones', async () => {
    const res = await operator()
      .post('/api/reports/generate')
      .send({controller: 'SalesReport'})
      .expect(422);
    expect(res.body.error).to.containDeep({
      statusCode: 422,
      name: 'UnprocessableEntityError',
    });
    expect(res.body.error.message).to.match(
      /Unknown report controller "SalesReport"; known: ExecutionsReport, FailedTasksReport, SchedulerInventoryReport, SelfCheckReport/,
    );
    expect(given.logs.find('Request failed').pop()).to.containDeep({
      error_code: 422,
    });
  });

  it('answers 422 for a wrong format and for oversized or invalid report_params', async () => {
    await operator()
      .post('/api/reports/generate')
      .send(direct('DOCX'))
      .expect(422);
    const big = await operator()
      .post('/api/reports/generate')
      .send({
        ...direct('CSV'),
        report_params: {status: ['failed'], pad: 'x'.repeat(20_000)},
      })
      .expect(422);
    expect(big.body.error.message).to.match(/at most 16384 bytes/);
    const bad = await operator()
      .post('/api/reports/generate')
      .send({...direct('CSV'), report_params: {from: 'last tuesday'}})
      .expect(422);
    expect(bad.body.error.details[0].path).to.equal('/report_params/from');
    await operator()
      .post('/api/reports/generate')
      .send({...direct('CSV'), extra: true})
      .expect(422);
  });

  it('reports the scheduler inventory with next run times on the API clock', async () => {
    const res = await operator()
      .post('/api/reports/generate')
      .send({...direct('CSV'), controller: 'SchedulerInventoryReport'})
      .expect(200);
    const [header, row] = parse(res.text) as string[][];
    expect(row[header.indexOf('Next run')]).to.equal(
      '2026-11-22T02:00:00.000Z',
    );
    expect(row[header.indexOf('Schedule')]).to.equal('0 2 * * *');
  });

  it("gives the inventory the next run next-runs gives: calendars, the active window and the producer's DST rule", async () => {
    await sql(
      `INSERT INTO calendar (id, name, kind, time_zone, dates)
       VALUES (7, 'holiday', 'blackout', 'UTC', '["2026-11-22"]'::jsonb)`,
    );
    await sql(
      `INSERT INTO scheduler
         (id, description, schedule, date_time, timezone, report_id, calendar_ids, starts_at, ends_at)
       VALUES (11, 'blacked out', '0 2 * * *', NULL, NULL, 1, '[7]', NULL, NULL),
              (12, 'window ended', '0 2 * * *', NULL, NULL, 1, '[]', NULL, '2026-11-20T00:00:00Z'),
              (13, 'window ahead', '0 * * * *', NULL, NULL, 1, '[]', '2026-12-01T00:30:00Z', NULL),
              (14, 'once, outside', NULL, '2026-11-22T08:00:00Z', NULL, 1, '[]', NULL, '2026-11-22T07:00:00Z'),
              (15, 'spring forward', '30 2 28 3 *', NULL, 'Europe/Berlin', 1, '[]', NULL, NULL),
              (16, 'unbounded', '0 2 * * *', NULL, NULL, 1, '[]', '-infinity', 'infinity')`,
    );
    // Written around the API (the zone trigger off for this one statement).
    await sql(
      `BEGIN;
       SET LOCAL session_replication_role = replica;
       INSERT INTO scheduler (id, description, schedule, timezone, report_id)
       VALUES (17, 'zone unknown', '0 2 * * *', 'Mars/Olympus', 1);
       COMMIT;`,
    );
    const res = await operator()
      .post('/api/reports/generate')
      .send({...direct('CSV'), controller: 'SchedulerInventoryReport'})
      .expect(200);
    const [header, ...rows] = parse(res.text) as string[][];
    const of = (id: number) => {
      const row = rows.find(r => r[header.indexOf('Scheduler')] === String(id));
      return {
        next: row?.[header.indexOf('Next run')],
        note: row?.[header.indexOf('Note')],
      };
    };
    expect(of(11)).to.eql({next: '2026-11-23T02:00:00.000Z', note: ''});
    expect(of(12)).to.eql({
      next: '',
      note: 'active window ended at 2026-11-20T00:00:00.000Z',
    });
    expect(of(13).next).to.equal('2026-12-01T01:00:00.000Z');
    expect(of(14)).to.eql({next: '', note: 'outside its active window'});
    // 02:30 does not exist in Berlin on 2027-03-28: the producer fires it at
    // 03:00 CEST (01:00 UTC), the first minute after the gap.
    expect(of(15).next).to.equal('2027-03-28T01:00:00.000Z');
    // The database's infinity is no bound (review: the report threw on it).
    expect(of(16)).to.eql({next: '2026-11-22T02:00:00.000Z', note: ''});
    expect(of(17)).to.eql({
      next: '',
      note: 'unknown time zone "Mars/Olympus": the producer does not fire it',
    });
    const listed = await operator()
      .get('/api/schedulers/15/next-runs?count=1')
      .expect(200);
    expect(listed.body.runs).to.eql([of(15).next]);
  });

  it('accepts only registered report classes in the report catalog', async () => {
    const admin = asUser(given.client, team.admin);
    const res = await admin
      .post('/api/reports')
      .send({name: 'Sales', controller: 'SalesReport'})
      .expect(422);
    expect(res.body.error.details[0].info.allowedValues).to.deepEqual([
      'ExecutionsReport',
      'FailedTasksReport',
      'SchedulerInventoryReport',
      'SelfCheckReport',
    ]);
    await admin
      .post('/api/reports')
      .send({name: 'Runs', controller: 'ExecutionsReport'})
      .expect(201);
  });

  it('keeps one report service and one broker connection per application, closed on stop', async () => {
    const other = await givenRunningApp();
    const reports = await other.app.get<ReportGenerationService>(
      'services.ReportGenerationService',
    );
    expect(await other.app.get('services.ReportGenerationService')).to.equal(
      reports,
    );
    expect(await other.app.get('services.BrokerService')).to.equal(
      await other.app.get('services.BrokerService'),
    );
    const {db} = reports.services();
    await db.query('SELECT 1');
    await other.app.stop();
    expect(db.ended).to.be.true();
  });

  it('needs a token (401) and an operator or admin (403)', async () => {
    await given.client
      .post('/api/reports/generate')
      .send(direct('CSV'))
      .expect(401);
    await asUser(given.client, team.viewer)
      .post('/api/reports/generate')
      .send(direct('CSV'))
      .expect(403);
  });
});
