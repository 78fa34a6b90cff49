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

/**
 * `rows` with the named bigint columns as numbers. node-postgres reads a
 * bigint as a string and a cast to int overflows past 2^31 - 1; ids stay far
 * below 2^53, where a number is exact.
 */
export async function* withBigintNumbers<T extends object>(
  rows: AsyncIterable<T>,
  columns: string[],
): AsyncGenerator<T> {
  for await (const row of rows) {
    const record = row as Record<string, unknown>;
    for (const column of columns) {
      if (record[column] != null) record[column] = Number(record[column]);
    }
    yield row;
  }
}
