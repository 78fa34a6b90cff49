import type {Pool} from 'pg';

const PAGE_SIZE = 2000;

/**
 * Streams a query's rows page by page with keyset paging on `id`, so a large
 * report holds one page in memory. `sql` must filter on `id > $1`, order by
 * id and end with `LIMIT $2`; its own parameters follow as $3, $4, ...
 */
export async function* pagedRows<T extends {id: number | string}>(
  db: Pool,
  sql: string,
  params: unknown[],
): AsyncGenerator<T> {
  let after = 0;
  for (;;) {
    const {rows} = await db.query<T>(sql, [after, PAGE_SIZE, ...params]);
    for (const row of rows) yield row;
    if (rows.length < PAGE_SIZE) return;
    after = Number(rows[rows.length - 1].id);
  }
}
