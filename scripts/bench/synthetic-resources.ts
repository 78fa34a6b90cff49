import type {CrudResource} from '../../dist/crud/crud-resource';
import type {Service} from './service-build';

/**
 * `count` resources shaped like the service's catalog entries (text, number,
 * flag, JSON and timestamp columns), each declared the way
 * src/resources/index.ts declares a real one: a model plus one entry for the
 * generic CRUD factory, with full CRUD for admins and reads for everyone.
 */
export function defineSyntheticResources(
  service: Service,
  count: number,
): CrudResource[] {
  const {Entity, ModelDefinition, defineModelClass} = service.repository;
  return Array.from({length: count}, (_, index) => {
    const suffix = String(index + 1).padStart(3, '0');
    const definition = new ModelDefinition({
      name: `Synthetic${suffix}`,
      settings: {
        strict: true,
        postgresql: {schema: 'public', table: `synthetic_${suffix}`},
      },
    })
      .addProperty('id', service.idColumn())
      .addProperty(
        'name',
        service.textColumn('name', {
          required: true,
          jsonSchema: {minLength: 1, maxLength: 200},
        }),
      )
      .addProperty('description', service.textColumn('description'))
      .addProperty('quantity', service.integerColumn('quantity'))
      .addProperty('active', service.booleanColumn('active', {default: true}))
      .addProperty('settings', service.jsonObjectColumn('settings'))
      .addProperty('owner_id', service.referenceColumn('owner_id'))
      .addProperty('created_at', service.timestampColumn('created_at'))
      .addProperty('updated_at', service.timestampColumn('updated_at'));
    const model = defineModelClass(Entity, definition);
    return service.defineResource({
      model,
      path: `/synthetic-${suffix}`,
      access: {
        read: service.EVERYONE,
        create: service.ADMINS,
        update: service.ADMINS,
        delete: service.ADMINS,
      },
    });
  });
}
