import {Client, escapeIdentifier} from 'pg';

/** Row count and a digest of every row, per table. */
export type Snapshot = Map<string, {rows: number; digest: string}>;

/**
 * What a refused request may write by design: a failed sign-in, and a wrong
 * current password on a password change, count against the throttle and
 * are audit events (issue 20). Only those rows are left out; any other
 * audit event of a refused request is a change.
 */
const REFUSAL_RECORDS: Record<string, string> = {
  login_throttle: 'false',
  audit_event:
    "t.entity <> 'session' AND t.action NOT IN ('password.change_failed', 'password.change_locked')",
};

/**
 * Fingerprints every table of the database, so a refused request can be shown
 * to have changed nothing. One statement, so the snapshot is consistent.
 */
export class DataSnapshotter {
  private statement?: string;

  constructor(private readonly client: Client) {}

  private async buildStatement(): Promise<string> {
    const {rows} = await this.client.query<{name: string}>(
      `SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
          AND table_name <> 'pgmigrations'
        ORDER BY table_name`,
    );
    return rows
      .map(
        ({name}) =>
          `SELECT ${this.client.escapeLiteral(name)} AS name, count(*)::int AS rows,
                  md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS digest
             FROM ${escapeIdentifier(name)} t
            WHERE ${REFUSAL_RECORDS[name] ?? 'true'}`,
      )
      .join('\nUNION ALL\n');
  }

  async take(): Promise<Snapshot> {
    this.statement ??= await this.buildStatement();
    const {rows} = await this.client.query<{
      name: string;
      rows: number;
      digest: string;
    }>(this.statement);
    return new Map(rows.map(r => [r.name, {rows: r.rows, digest: r.digest}]));
  }
}

/** Tables whose content differs, with their row counts before and after. */
export function changedTables(before: Snapshot, after: Snapshot): string[] {
  return [...after.entries()]
    .filter(([name, now]) => before.get(name)?.digest !== now.digest)
    .map(
      ([name, now]) => `${name} (${before.get(name)?.rows} → ${now.rows} rows)`,
    );
}
