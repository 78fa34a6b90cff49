import type {Entity, Where} from '@loopback/repository';
import type {Pool} from 'pg';
import {repositorySql} from '../database/repository-sql';
import type {EntityRepository} from './repositories';

/** The SQL side of loopback-connector that a record read uses. */
interface SqlConnector {
  buildColumnNames(model: string, filter: object): string;
  tableEscaped(model: string): string;
  columnEscaped(model: string, property: string): string;
  fromRow(model: string, row: object): object;
}

/** The juggler model class behind a repository (its constructor builds instances as find() does). */
type JugglerModelClass = new (
  data: object,
  options: {applySetters: boolean; persisted: boolean},
) => {toObject(): object};

const readers = new WeakMap<object, RecordReader<Entity>>();

/** A read's statement: its SQL and the name it is prepared under. */
interface ReadStatement {
  name: string;
  text: string;
}

/**
 * PostgreSQL's answers to a prepared statement the schema has moved under:
 * "cached plan must not change result type", and a statement gone.
 */
const REPREPARE_CODES = new Set(['0A000', '26000']);

/** Statement names of this process, one per distinct SQL text. */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name)
    statementNames.set(text, (name = `record-read-${statementNames.size + 1}`));
  return name;
}

/** The reader of a repository (one per repository: it keeps built statements). */
export function recordReaderOf<E extends Entity>(
  repository: EntityRepository<E>,
): RecordReader<E> {
  let reader = readers.get(repository) as RecordReader<E> | undefined;
  if (!reader) {
    reader = new RecordReader(repository);
    readers.set(repository, reader as unknown as RecordReader<Entity>);
  }
  return reader;
}

/**
 * Reads one record by equality conditions (its id, plus a caller's scope
 * such as `user_id`) the way `repository.findOne({where})` does, without
 * juggler's per-call work: filter normalisation, coercion and SQL building
 * cost three times the database round trip on a hot read. The statement is
 * built once per set of condition names, from the connector's own column
 * list, table and column names; a row becomes an entity through the
 * connector's fromRow and the juggler model's constructor, as find() makes
 * it. Conditions it cannot express (anything but property = value) answer
 * `undefined` from `plainConditions`, and the caller uses findOne.
 *
 * Where the sessions are ours (DATABASE_POOL_MODE=session, the default)
 * the statement is a named one: each pooled connection parses and plans it
 * once, not on every read (about 60 to 100 µs of a by-id read's 250 µs round
 * trip on the benchmark machine). Behind a transaction pooler (PgBouncer) a
 * session is not ours to keep, so it is sent unnamed through the connector.
 */
export class RecordReader<E extends Entity> {
  private readonly statements = new Map<string, ReadStatement>();
  private readonly modelName: string;
  private readonly properties: Set<string>;

  constructor(private readonly repository: EntityRepository<E>) {
    this.modelName = repository.entityClass.modelName;
    this.properties = new Set(
      Object.keys(repository.entityClass.definition.properties),
    );
  }

  /**
   * The conditions of `where` when it is a plain AND of property = value
   * (an `and` list of such objects included); otherwise undefined.
   */
  plainConditions(where: Where<E>): Record<string, unknown> | undefined {
    const conditions: Record<string, unknown> = {};
    const add = (clause: object): boolean => {
      for (const [name, value] of Object.entries(clause)) {
        if (name === 'and' && Array.isArray(value)) {
          if (!value.every(item => typeof item === 'object' && add(item))) {
            return false;
          }
        } else if (
          this.properties.has(name) &&
          !(name in conditions) &&
          (typeof value === 'number' ||
            typeof value === 'string' ||
            typeof value === 'boolean')
        ) {
          conditions[name] = value;
        } else {
          return false;
        }
      }
      return true;
    };
    return add(where) ? conditions : undefined;
  }

  /** The one record matching every condition, or undefined. */
  async findOne(conditions: Record<string, unknown>): Promise<E | undefined> {
    const names = Object.keys(conditions).sort();
    const rows = await this.rows(
      this.statement(names),
      names.map(name => conditions[name]),
    );
    if (rows.length === 0) return undefined;
    const connector = this.connector;
    const Model = this.repository.modelClass as unknown as JugglerModelClass;
    const instance = new Model(connector.fromRow(this.modelName, rows[0]), {
      applySetters: false,
      persisted: true,
    });
    return new this.repository.entityClass(instance.toObject()) as E;
  }

  private async rows(
    statement: ReadStatement,
    values: unknown[],
  ): Promise<object[]> {
    const dataSource = this.repository.dataSource;
    if ((dataSource.settings as {poolMode?: string}).poolMode === 'session') {
      if (!dataSource.connected) await dataSource.connect();
      const pool = (dataSource.connector as {pg?: Pool} | undefined)?.pg;
      if (pool) {
        try {
          return (await pool.query({...statement, values})).rows;
        } catch (error) {
          // The table changed since this connection prepared the statement
          // (a deploy's migration while this process still runs): pg-pool
          // drops that connection; this read goes once more, unnamed.
          if (!REPREPARE_CODES.has((error as {code?: string}).code ?? '')) {
            throw error;
          }
          return (await pool.query(statement.text, values)).rows;
        }
      }
    }
    return (await repositorySql(this.repository)(
      statement.text,
      values,
    )) as object[];
  }

  private get connector(): SqlConnector {
    return this.repository.dataSource.connector as unknown as SqlConnector;
  }

  private statement(names: string[]): ReadStatement {
    const key = names.join(',');
    let statement = this.statements.get(key);
    if (!statement) {
      const connector = this.connector;
      const where = names
        .map(
          (name, i) =>
            `${connector.columnEscaped(this.modelName, name)} = $${i + 1}`,
        )
        .join(' AND ');
      const text =
        `SELECT ${connector.buildColumnNames(this.modelName, {})}` +
        ` FROM ${connector.tableEscaped(this.modelName)} WHERE ${where} LIMIT 1`;
      statement = {name: statementName(text), text};
      this.statements.set(key, statement);
    }
    return statement;
  }
}
