import type {OpenApiSpec, OperationObject} from '@loopback/rest';

const HTTP_METHODS = [
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
  'trace',
] as const;

/** Calls `visit` with every operation of the document, in document order. */
export function forEachOperation(
  document: OpenApiSpec,
  visit: (operation: OperationObject, path: string) => void,
): void {
  for (const [path, pathItem] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = pathItem[method] as OperationObject | undefined;
      if (operation) visit(operation, path);
    }
  }
}
