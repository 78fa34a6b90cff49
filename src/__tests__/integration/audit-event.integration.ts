import {expect} from '@loopback/testlab';
import {Pool} from 'pg';
import {appendAuditEvent, diffChanges} from '../../audit/audit-event';
import {sql, TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';

describe('audit log writer', () => {
  let pool: Pool;
  before(() => {
    pool = new Pool({connectionString: TEST_DATABASE_URL, max: 1});
  });
  after(() => pool.end());
  beforeEach(() => truncateAll());

  it('appends an event with its changes, and masks secrets', async () => {
    const changes = diffChanges(
      {description: 'old', password_hash: 'x', status: 'active'},
      {description: 'new', password_hash: 'y', status: 'active'},
    );
    await appendAuditEvent((text, params) => pool.query(text, params), {
      actorUserId: null,
      action: 'update',
      entity: 'scheduler',
      entityId: 7,
      reason: 'ticket 42',
      changes,
      requestId: 'req-1',
    });
    const rows = await sql<Record<string, unknown>>(
      `SELECT action, entity, entity_id, reason, changes, request_id FROM audit_event`,
    );
    expect(rows).to.deepEqual([
      {
        action: 'update',
        entity: 'scheduler',
        entity_id: '7',
        reason: 'ticket 42',
        changes: {
          description: ['old', 'new'],
          password_hash: ['[redacted]', '[redacted]'],
        },
        request_id: 'req-1',
      },
    ]);
  });

  it('rolls back with the transaction that carried it', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await appendAuditEvent((text, params) => client.query(text, params), {
        actorUserId: null,
        action: 'delete',
        entity: 'worker',
        entityId: 1,
      });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await sql(`SELECT * FROM audit_event`)).to.deepEqual([]);
  });

  it('refuses a reason over 500 characters at the database too', async () => {
    await expect(
      appendAuditEvent((text, params) => pool.query(text, params), {
        actorUserId: null,
        action: 'update',
        entity: 'scheduler',
        reason: 'x'.repeat(501),
      }),
    ).to.be.rejectedWith(/audit_event_reason_check/);
  });
});
