import {expect} from '@loopback/testlab';
import {withoutRequestId} from '../fixtures/error-body';
import type {Role} from '../../models/user-role';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, truncateAll} from '../fixtures/test-database';

type Op = 'find' | 'findById' | 'create' | 'updateById' | 'deleteById';
const OPS: Op[] = ['find', 'findById', 'create', 'updateById', 'deleteById'];

/** r = may read, w = may also create, update and delete, - = nothing. */
type Grant = 'r' | 'rw' | '-';

interface Case {
  path: string;
  grants: Record<Role, Grant>;
  /** A valid create body, and a valid patch. */
  body: (team: Team, n: number) => object;
  patch: object;
  idField?: string;
  /** Rows only their owner (or an admin) may change: the caller writes its own. */
  ownerOnly?: boolean;
}

const unique = () => Math.random().toString(36).slice(2, 8);
const OPERATED = {viewer: 'r', operator: 'rw', admin: 'rw'} as const;
const ADMINISTERED = {viewer: 'r', operator: 'r', admin: 'rw'} as const;

const MATRIX: Case[] = [
  {
    path: '/schedulers',
    grants: OPERATED,
    body: () => givenSchedulerBody(),
    patch: {status: false},
  },
  {
    path: '/reminders',
    grants: OPERATED,
    body: () => ({message: 'Standup'}),
    patch: {message: 'Retro'},
  },
  {
    path: '/tickets',
    grants: OPERATED,
    body: () => ({title: 'Broken'}),
    patch: {status: 'closed'},
    ownerOnly: true,
  },
  {
    path: '/reports',
    grants: ADMINISTERED,
    body: () => ({name: 'R', controller: 'SelfCheckReport'}),
    patch: {name: 'R2'},
  },
  {
    path: '/workers',
    grants: ADMINISTERED,
    body: () => ({name: 'W', command: 'sample-worker'}),
    patch: {name: 'W2'},
  },
  {
    path: '/groups',
    grants: ADMINISTERED,
    body: () => ({name: `g-${unique()}`}),
    patch: {description: 'x'},
  },
  {
    path: '/languages',
    grants: ADMINISTERED,
    // A random subtag keeps the codes unique (the column is UNIQUE).
    body: () => ({code: `xx-${unique()}`, name: 'X'}),
    patch: {name: 'Y'},
  },
  {
    path: '/config',
    grants: ADMINISTERED,
    body: () => ({key: `k.${unique()}`, value: {on: true}}),
    patch: {value: 3},
    idField: 'key',
  },
  {
    path: '/users',
    grants: {viewer: '-', operator: '-', admin: 'rw'},
    body: () => ({
      email: `u-${unique()}@example.com`,
      name: 'U',
      role: 'viewer',
      password: 'long-password-1',
    }),
    patch: {name: 'V'},
  },
];

function expected(grant: Grant, op: Op): number {
  const reads = op === 'find' || op === 'findById';
  const allowed = grant === 'rw' || (grant === 'r' && reads);
  if (!allowed) return 403;
  return {
    find: 200,
    findById: 200,
    create: 201,
    updateById: 200,
    deleteById: 204,
  }[op];
}

describe('authorization: role x operation', () => {
  let given: TestApp;
  let team: Team;

  before(async () => {
    given = await givenRunningApp();
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
  });
  after(() => given.app.stop());

  for (const entry of MATRIX) {
    for (const role of ['viewer', 'operator', 'admin'] as Role[]) {
      it(`${role} on ${entry.path}: ${entry.grants[role]}`, async () => {
        const admin = asUser(given.client, team.admin);
        const caller = asUser(given.client, team[role]);
        const url = `/api${entry.path}`;
        const seeder =
          entry.ownerOnly && entry.grants[role] === 'rw' ? caller : admin;
        const seed = await seeder
          .post(url)
          .send(entry.body(team, 1))
          .expect(201);
        const id = encodeURIComponent(seed.body[entry.idField ?? 'id']);
        const statuses: Record<Op, number> = {
          find: (await caller.get(url)).status,
          findById: (await caller.get(`${url}/${id}`)).status,
          create: (await caller.post(url).send(entry.body(team, 2))).status,
          updateById: (await caller.patch(`${url}/${id}`).send(entry.patch))
            .status,
          deleteById: (await caller.delete(`${url}/${id}`)).status,
        };
        const want = Object.fromEntries(
          OPS.map(op => [op, expected(entry.grants[role], op)]),
        );
        expect(statuses).to.deepEqual(want);
      });
    }
  }

  it('gives every role read-only access to scheduler executions', async () => {
    for (const role of ['viewer', 'operator', 'admin'] as Role[]) {
      const caller = asUser(given.client, team[role]);
      await caller.get('/api/scheduler-executions').expect(200);
      // No write route exists at all.
      await caller.post('/api/scheduler-executions').send({}).expect(404);
      await caller.delete('/api/scheduler-executions/1').expect(404);
    }
  });

  it('answers a forbidden call with 403 ForbiddenError in the uniform body', async () => {
    const res = await asUser(given.client, team.viewer)
      .post('/api/schedulers')
      .send(givenSchedulerBody())
      .expect(403);
    expect(withoutRequestId(res)).to.deepEqual({
      error: {
        statusCode: 403,
        name: 'ForbiddenError',
        message: 'Access denied',
      },
    });
  });

  it('lets everyone read and mark their own notifications; only admins create them', async () => {
    const admin = asUser(given.client, team.admin);
    for (const role of ['viewer', 'operator'] as Role[]) {
      const caller = asUser(given.client, team[role]);
      const own = await admin
        .post('/api/notifications')
        .send({user_id: team[role].id, title: 'Yours'})
        .expect(201);
      await caller.get(`/api/notifications/${own.body.id}`).expect(200);
      await caller
        .patch(`/api/notifications/${own.body.id}`)
        .send({read_at: new Date().toISOString()})
        .expect(200);
      await caller
        .post('/api/notifications')
        .send({user_id: team[role].id, title: 'x'})
        .expect(403);
      await caller.delete(`/api/notifications/${own.body.id}`).expect(204);
    }
  });

  it('requires a token on every operation except the public ones', async () => {
    const spec = (await given.client.get('/api/openapi.json').expect(200)).body;
    expect(spec.components.securitySchemes).to.deepEqual({
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The token from POST /auth/login',
      },
      apiKeyAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'tsk_ API key',
        description:
          'An API key from POST /api-keys (tsk_…), sent as Authorization: Bearer tsk_…',
      },
    });
    // Probes for orchestrators answer without a token (see health.acceptance).
    const PUBLIC = new Set([
      'GET /ping',
      'POST /auth/login',
      'GET /health',
      'GET /ready',
    ]);
    // A person's own session, password and keys: never through an API key.
    const PERSON_ONLY = new Set([
      'POST /auth/logout',
      'POST /auth/logout-all',
      'PATCH /users/me/password',
      'POST /api-keys',
      'GET /api-keys',
      'DELETE /api-keys/{id}',
    ]);
    const checked: string[] = [];
    for (const [path, methods] of Object.entries(
      spec.paths as Record<string, object>,
    )) {
      for (const method of Object.keys(methods)) {
        const name = `${method.toUpperCase()} ${path}`;
        // The document says what the server does: bearer (and mostly API keys) on all but the public ones.
        const declared = (methods as Record<string, {security?: object}>)[
          method
        ].security;
        expect({name, declared}).to.deepEqual({
          name,
          declared: PUBLIC.has(name)
            ? []
            : PERSON_ONLY.has(name)
              ? [{bearerAuth: []}]
              : [{bearerAuth: []}, {apiKeyAuth: []}],
        });
        if (PUBLIC.has(name)) continue;
        const url = `/api${path.replace('{id}', '1')}`;
        const res = await given.client[method as 'get'](url).send({});
        expect({name, status: res.status}).to.deepEqual({name, status: 401});
        checked.push(name);
      }
    }
    expect(checked.length).to.be.greaterThan(50);
  });
});
