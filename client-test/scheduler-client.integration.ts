// First: compiles Angular just in time, before any Angular module loads.
import './angular-jit';
import {HttpErrorResponse, HttpInterceptorFn} from '@angular/common/http';
import {
  EnvironmentInjector,
  inject,
  runInInjectionContext,
  Type,
} from '@angular/core';
import {expect} from '@loopback/testlab';
import {firstValueFrom, Observable} from 'rxjs';
import {createAngularApp} from './angular-app';
import type {ErrorResponse, NewScheduler} from '../client/models';
import {AuthService, SchedulerService} from '../client/services';
import {loadApiFixtures} from './api-fixtures';

type Fixtures = Awaited<ReturnType<typeof loadApiFixtures>>;

describe('generated Angular client against the running API', () => {
  let fixtures: Fixtures;
  let given: Awaited<ReturnType<Fixtures['givenRunningApp']>>;
  let team: Awaited<ReturnType<Fixtures['givenTeam']>>;
  let angular: EnvironmentInjector;
  let token: string | undefined;

  // How a front-end app attaches the token it got from AuthService.login.
  const bearerToken: HttpInterceptorFn = (request, next) =>
    next(
      token
        ? request.clone({setHeaders: {Authorization: `Bearer ${token}`}})
        : request,
    );

  before(async () => {
    fixtures = await loadApiFixtures();
    given = await fixtures.givenRunningApp();
    await fixtures.truncateAll();
    await fixtures.givenCatalog();
    team = await fixtures.givenTeam(given.app);
    angular = createAngularApp(given.app.restServer.url!, [bearerToken]);
  });
  after(async () => {
    angular?.destroy();
    await given?.app.stop();
  });
  beforeEach(() => {
    token = undefined;
  });

  /** What a component gets from `inject(service)`. */
  function service<T>(type: Type<T>): T {
    return runInInjectionContext(angular, () => inject(type));
  }

  async function logInAs(user: {email: string}): Promise<void> {
    const session = await firstValueFrom(
      service(AuthService).login({
        body: {email: user.email, password: fixtures.TEST_PASSWORD},
      }),
    );
    token = session.token;
  }

  /** The error an observable fails with; fails the test if it succeeds. */
  async function failureOf(call: Observable<unknown>) {
    const outcome = await firstValueFrom(call).then(
      body => ({body}),
      (error: unknown) => ({error}),
    );
    if (!('error' in outcome)) {
      throw new Error(`expected an error, got ${JSON.stringify(outcome)}`);
    }
    expect(outcome.error).to.be.instanceOf(HttpErrorResponse);
    return outcome.error as HttpErrorResponse;
  }

  const newScheduler = (overrides: Partial<NewScheduler> = {}) =>
    ({
      description: 'Nightly export',
      schedule: '0 2 * * *',
      report_id: 1,
      params: {controller: 'SalesReport'},
      ...overrides,
    }) satisfies NewScheduler;

  it('logs in through AuthService and gets a bearer token with its expiry', async () => {
    const session = await firstValueFrom(
      service(AuthService).login({
        body: {email: team.operator.email, password: fixtures.TEST_PASSWORD},
      }),
    );
    expect(session.token.split('.')).to.have.length(3);
    expect(Date.parse(session.expires_at)).to.be.above(Date.now());
  });

  it('creates, finds, updates and deletes a scheduler through SchedulerService', async () => {
    await logInAs(team.operator);
    const schedulers = service(SchedulerService);

    const created = await firstValueFrom(
      schedulers.create$Response({body: newScheduler()}),
    );
    expect(created.status).to.equal(201);
    const id = created.body.id!;
    expect(created.body).to.containDeep({
      id,
      description: 'Nightly export',
      user_id: team.operator.id,
      status: true,
    });
    await firstValueFrom(
      schedulers.create({body: newScheduler({description: 'Weekly digest'})}),
    );

    const byDescription = await firstValueFrom(
      schedulers.find({filter: {where: {description: 'Nightly export'}}}),
    );
    expect(byDescription.map(found => found.id)).to.deepEqual([id]);
    const newestOnly = await firstValueFrom(
      schedulers.find({filter: {order: ['id DESC'], limit: 1}}),
    );
    expect(newestOnly.map(found => found.description)).to.deepEqual([
      'Weekly digest',
    ]);
    const one = await firstValueFrom(schedulers.findById({id}));
    expect(one.schedule).to.equal('0 2 * * *');

    const updated = await firstValueFrom(
      schedulers.updateById({
        id,
        body: {status: false, schedule: '30 7 * * 1-5'},
      }),
    );
    expect(updated).to.containDeep({
      id,
      status: false,
      schedule: '30 7 * * 1-5',
    });

    const deleted = await firstValueFrom(schedulers.deleteById$Response({id}));
    expect(deleted.status).to.equal(204);
    const gone = await failureOf(schedulers.findById({id}));
    expect(gone.status).to.equal(404);
  });

  it('fails an invalid scheduler with a 422 error response carrying the uniform error body', async () => {
    await logInAs(team.operator);

    const failure = await failureOf(
      service(SchedulerService).create({
        body: newScheduler({schedule: '61 * * * *'}),
      }),
    );

    expect(failure.status).to.equal(422);
    const body: ErrorResponse = failure.error;
    expect(body.error).to.containDeep({
      statusCode: 422,
      name: 'UnprocessableEntityError',
    });
    expect(body.error.details?.map(detail => detail.path)).to.containEql(
      '/schedule',
    );
  });

  it('fails a call without a token with a 401 error response carrying the uniform error body', async () => {
    const failure = await failureOf(service(SchedulerService).find());

    expect(failure.status).to.equal(401);
    const body: ErrorResponse = failure.error;
    expect(body.error).to.containDeep({
      statusCode: 401,
      name: 'UnauthorizedError',
    });
  });

  it('fails a wrong password with a 401 error response from AuthService.login', async () => {
    const failure = await failureOf(
      service(AuthService).login({
        body: {email: team.operator.email, password: 'not-the-password'},
      }),
    );

    expect(failure.status).to.equal(401);
    expect((failure.error as ErrorResponse).error).to.containDeep({
      statusCode: 401,
      name: 'UnauthorizedError',
      message: 'Invalid email or password',
    });
  });
});
