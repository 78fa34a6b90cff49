import type {Role} from '../models/user-role';
import type {CrudResource} from './crud-resource';

export type CrudOperation =
  'find' | 'findById' | 'create' | 'updateById' | 'deleteById';

export interface OperationDocs {
  summary: string;
  description: string;
}

const rolesText = (roles: Role[]) => `Roles: ${[...roles].sort().join(', ')}.`;

/** `/scheduler-executions` → `scheduler executions`. */
function plural(resource: CrudResource): string {
  return resource.path.replace(/^\//, '').replace(/-/g, ' ');
}

/** Summary and description of one generated operation, with who may call it. */
export function crudDocs(
  resource: CrudResource,
  operation: CrudOperation,
  roles: Role[],
): OperationDocs {
  const name = resource.model.modelName;
  const many = plural(resource);
  const note = resource.notes?.[operation];
  const texts: Record<CrudOperation, OperationDocs> = {
    find: {
      summary: `List ${many}`,
      description: `${name} records matching the LoopBack \`filter\` (where, fields, order, limit, skip); limit defaults to 100, at most 1000. An unknown field or operator, or an operand the field cannot take, is a 422.`,
    },
    findById: {
      summary: `Get one ${name}`,
      description: `The ${name} with this id.`,
    },
    create: {
      summary: `Create a ${name}`,
      description: `Stores a new ${name} and answers it as stored (201). Server-owned and unknown fields are refused.`,
    },
    updateById: {
      summary: `Update a ${name}`,
      description: `Changes the fields the body names (\`null\` clears an optional one) and answers the whole updated ${name}.`,
    },
    deleteById: {
      summary: `Delete a ${name}`,
      description: `Deletes the ${name} permanently (204).`,
    },
  };
  const {summary, description} = texts[operation];
  return {
    summary,
    description: [description, note, rolesText(roles)]
      .filter(Boolean)
      .join(' '),
  };
}
