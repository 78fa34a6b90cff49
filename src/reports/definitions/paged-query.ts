import type {Pool, QueryResult} from 'pg';

const PAGE_SIZE = 2000;

/**
 * Streams a query's rows page by page with keyset paging on `id`, so a large
 * report holds at most two pages in memory. The next page is fetched while
 * the current one is rendered. `sql` must filter on `id > $1`, order by id
 * and end with `LIMIT $2`; its own parameters follow as $3, $4, ...
 */
export async function* pagedRows<T extends {id: number | string}>(
  db: Pool,
  sql: string,
  params: unknown[],
): AsyncGenerator<T> {
  const page = (after: number) =>
    db.query<T>(sql, [after, PAGE_SIZE, ...params]);
  let pending: Promise<QueryResult<T>> | undefined = page(0);
  try {
    while (pending) {
      const {rows}: QueryResult<T> = await pending;
      pending =
        rows.length < PAGE_SIZE
          ? undefined
          : page(Number(rows[rows.length - 1].id));
      // A consumer that stops early must not leave a rejection unhandled.
      pending?.catch(() => undefined);
      for (const row of rows) yield row;
    }
  } finally {
    await pending?.catch(() => undefined);
  }
}
