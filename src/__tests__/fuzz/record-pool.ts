import type {FuzzOperation} from './api-operations';
import type {FuzzRequest} from './request-arbitrary';
import type {Answer} from './response-checks';

type Row = Record<string, unknown>;

/** Records kept per resource: enough variety, bounded memory. */
const KEPT = 100;

/** `/schedulers` for `/schedulers` and `/schedulers/{id}`; none for other paths. */
export function resourceOf(path: string): string | undefined {
  return /^(\/[^/{}]+)(\/\{[^}]+\})?$/.exec(path)?.[1];
}

const isRow = (value: unknown): value is Row =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Records the service returned, per resource, for record-based bodies. Filled
 * in request order, so a run repeated with its seed builds the same bodies
 * (timestamps aside).
 */
export class RecordPool {
  private readonly rows = new Map<string, Map<string, Row>>();
  private readonly operations: Map<string, FuzzOperation>;

  constructor(operations: FuzzOperation[]) {
    this.operations = new Map(operations.map(op => [op.id, op]));
  }

  remember(request: FuzzRequest, answer: Answer): void {
    const operation = this.operations.get(request.operation);
    const resource = operation && resourceOf(operation.path);
    if (!resource || answer.status >= 300 || !answer.text) return;
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      return;
    }
    const rows = this.rows.get(resource) ?? new Map<string, Row>();
    for (const row of (Array.isArray(body) ? body : [body]).filter(isRow)) {
      const key = JSON.stringify(row.id ?? row.key);
      rows.delete(key);
      rows.set(key, row);
      if (rows.size > KEPT) rows.delete(rows.keys().next().value!);
    }
    this.rows.set(resource, rows);
  }

  /** The request with a record-based body turned into the exact text sent. */
  resolve(request: FuzzRequest): FuzzRequest {
    const recipe = request.body?.fromRecord;
    const operation = this.operations.get(request.operation);
    if (!recipe || !operation) return request;
    const allowed = Object.keys(operation.body?.schema.properties ?? {});
    const resource = resourceOf(operation.path);
    const rows = [...(this.rows.get(resource ?? '')?.values() ?? [])];
    const row = rows.length ? rows[recipe.pick % rows.length] : {};
    const fromRow = Object.fromEntries(
      Object.entries(row).filter(([name]) => allowed.includes(name)),
    );
    const body = {...recipe.base, ...fromRow};
    // Own-property assignment, so an override named __proto__ is sent as a key.
    const text = JSON.stringify(
      Object.fromEntries([
        ...Object.entries(body).filter(([name]) => !(name in recipe.overrides)),
        ...Object.entries(recipe.overrides),
      ]),
    );
    const {kind, contentType} = request.body!;
    return {...request, body: {kind, contentType, text}};
  }
}
