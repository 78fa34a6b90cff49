import {expect} from '@loopback/testlab';
import {ReportInputError} from '../../reports/report';
import {prepareReport} from '../../reports/report-runner';

const context = {
  now: new Date('2026-11-21T10:00:00Z'),
  timeZone: 'UTC',
  userId: 7,
};

function refusal(request: Record<string, unknown>): ReportInputError {
  try {
    prepareReport(request as never, context);
  } catch (error) {
    expect(error).to.be.instanceOf(ReportInputError);
    expect((error as ReportInputError).statusCode).to.equal(422);
    return error as ReportInputError;
  }
  throw new Error('expected a refusal');
}

describe('report requests at the boundary', () => {
  it('prepares a valid request: params typed, templates and file name resolved', () => {
    const prepared = prepareReport(
      {
        controller: 'ExecutionsReport',
        options_interface: {
          output: {
            file: {format: 'Excel', filename: 'runs-{{yesterday}}-{{user_id}}'},
          },
        },
        report_params: {
          from: '{{yesterday}}',
          to: '{{today}}',
          status: ['failed'],
        },
      },
      context,
    );
    expect(prepared.filename).to.equal('runs-2026-11-20-7.xlsx');
    expect(prepared.params).to.deepEqual({
      from: new Date('2026-11-20T00:00:00Z'),
      to: new Date('2026-11-21T00:00:00Z'),
      status: ['failed'],
      scheduler_id: undefined,
    });
    expect(prepared.options.delivery.instant).to.be.false();
  });

  it('names the known reports for an unknown controller', () => {
    const error = refusal({controller: '../../etc/passwd'});
    expect(error.message).to.match(
      /ExecutionsReport, FailedTasksReport, SchedulerInventoryReport, SelfCheckReport/,
    );
  });

  it('does not resolve inherited properties as reports', () => {
    refusal({controller: 'constructor'});
    refusal({controller: '__proto__'});
  });

  it('refuses a format other than PDF, Excel or CSV', () => {
    const error = refusal({
      controller: 'SelfCheckReport',
      options_interface: {output: {file: {format: 'DOCX'}}},
    });
    expect(error.message).to.match(/format must be one of PDF, Excel, CSV/);
  });

  it('refuses an output type other than Direct or Attachment', () => {
    refusal({
      controller: 'SelfCheckReport',
      options_interface: {output: {file: {type: 'Inline'}}},
    });
  });

  it('refuses oversized report_params', () => {
    const error = refusal({
      controller: 'ExecutionsReport',
      report_params: {status: ['failed'], padding: 'x'.repeat(20_000)},
    });
    expect(error.message).to.match(/at most 16384 bytes/);
  });

  it('refuses unknown and mistyped report_params', () => {
    expect(
      refusal({
        controller: 'ExecutionsReport',
        report_params: {stauts: ['failed']},
      }).message,
    ).to.match(/Unknown report_params "stauts"/);
    refusal({
      controller: 'ExecutionsReport',
      report_params: {status: ['done']},
    });
    refusal({
      controller: 'ExecutionsReport',
      report_params: {scheduler_id: -1},
    });
    refusal({
      controller: 'SchedulerInventoryReport',
      report_params: {active_only: 'yes'},
    });
    refusal({controller: 'FailedTasksReport', report_params: {type: 'worker'}});
  });

  it('refuses bad recipient lists and non-boolean delivery flags', () => {
    refusal({
      controller: 'SelfCheckReport',
      options_interface: {delivery: {deliver_to: {user_id: ['1']}}},
    });
    refusal({
      controller: 'SelfCheckReport',
      options_interface: {delivery: {email: 'yes'}},
    });
  });
});
