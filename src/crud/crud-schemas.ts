import {
  getFilterSchemaFor,
  getModelSchemaRef,
  SchemaObject,
} from '@loopback/rest';
import {SERVER_TIMESTAMPS} from '../models/columns';
import type {BodyExtra, CrudResource} from './crud-resource';

type ModelClass = CrudResource['model'];

export function idPropertyOf(model: ModelClass): string {
  return model.getIdProperties()[0];
}

function hiddenProperties(model: ModelClass): string[] {
  return (model.definition.settings.hiddenProperties as string[]) ?? [];
}

/** Properties a client may see and filter on (hidden ones excluded). */
export function visibleProperties(model: ModelClass): Set<string> {
  const hidden = new Set(hiddenProperties(model));
  return new Set(
    Object.keys(model.definition.properties).filter(name => !hidden.has(name)),
  );
}

/** Visible properties stored as timestamps: their filter operands must be dates. */
export function dateProperties(model: ModelClass): Set<string> {
  const {properties} = model.definition;
  return new Set(
    [...visibleProperties(model)].filter(name => {
      const type = properties[name].type;
      return type === Date || String(type).toLowerCase() === 'date';
    }),
  );
}

/** Visible properties stored as text: the only ones `regexp` may match. */
export function textProperties(model: ModelClass): Set<string> {
  const {properties} = model.definition;
  return new Set(
    [...visibleProperties(model)].filter(name => {
      const type = properties[name].type;
      return type === String || String(type).toLowerCase() === 'string';
    }),
  );
}

/**
 * JSON columns (objects and lists, jsonb): `like` and its kin cannot match
 * them (the connector compares the pattern as a JSON string, quotes and
 * all, so they matched nothing and `nlike` everything).
 */
export function jsonProperties(model: ModelClass): Set<string> {
  const {properties} = model.definition;
  return new Set(
    [...visibleProperties(model)].filter(name => {
      const type = properties[name].type;
      const named = String(
        typeof type === 'function' ? type.name : type,
      ).toLowerCase();
      return (
        Array.isArray(type) ||
        named === 'object' ||
        named === 'array' ||
        (properties[name] as {postgresql?: {dataType?: string}}).postgresql
          ?.dataType === 'jsonb'
      );
    }),
  );
}

/** Properties no request body may carry. */
export function serverOwnedProperties(resource: CrudResource): string[] {
  const {model} = resource;
  const properties = Object.keys(model.definition.properties);
  const owned = new Set([
    ...(model.definition.properties[idPropertyOf(model)].generated
      ? [idPropertyOf(model)]
      : []),
    ...SERVER_TIMESTAMPS,
    ...hiddenProperties(model),
    ...(resource.serverOwned ?? []),
  ]);
  return properties.filter(name => owned.has(name));
}

/** The record as returned, named after its model even without hidden properties. */
export function responseSchema(model: ModelClass) {
  return getModelSchemaRef(model, {
    title: model.modelName,
    exclude: hiddenProperties(model) as never[],
  });
}

/** A schema ref whose definition is a copy with `extras` added (the cached one stays intact). */
function withExtras(
  ref: ReturnType<typeof getModelSchemaRef>,
  title: string,
  extras: Record<string, BodyExtra> = {},
): SchemaObject {
  const definition = ref.definitions[title] as SchemaObject;
  const required = [
    ...(definition.required ?? []),
    ...Object.entries(extras)
      .filter(([, extra]) => extra.required)
      .map(([name]) => name),
  ];
  const copy: SchemaObject = {
    ...definition,
    properties: {
      ...definition.properties,
      ...Object.fromEntries(
        Object.entries(extras).map(([name, extra]) => [name, extra.schema]),
      ),
    },
    ...(required.length ? {required} : {}),
  };
  return {$ref: ref.$ref, definitions: {[title]: copy}} as SchemaObject;
}

export function createBodySchema(resource: CrudResource): SchemaObject {
  const title = `New${resource.model.modelName}`;
  const ref = getModelSchemaRef(resource.model, {
    title,
    exclude: serverOwnedProperties(resource) as never[],
  });
  return withExtras(ref, title, resource.createExtras);
}

export function updateBodySchema(resource: CrudResource): SchemaObject {
  const title = `${resource.model.modelName}Patch`;
  const owned = new Set([
    ...serverOwnedProperties(resource),
    idPropertyOf(resource.model),
  ]);
  const notUpdatable = resource.updatable
    ? Object.keys(resource.model.definition.properties).filter(
        name => !resource.updatable!.includes(name),
      )
    : [];
  const ref = getModelSchemaRef(resource.model, {
    title,
    partial: true,
    exclude: [...owned, ...notUpdatable] as never[],
  });
  return withExtras(ref, title, resource.updateExtras);
}

/**
 * LoopBack's filter schema for the model, without hidden properties in
 * `fields` (LoopBack lists them all, `password_hash` included).
 */
export function visibleFilterSchema(model: ModelClass): SchemaObject {
  const schema = structuredClone(getFilterSchemaFor(model)) as SchemaObject;
  const hidden = new Set(hiddenProperties(model));
  const fields = schema.properties?.fields as SchemaObject | undefined;
  for (const variant of (fields?.oneOf ?? []) as SchemaObject[]) {
    for (const name of hidden) delete variant.properties?.[name];
    const items = variant.items as SchemaObject | undefined;
    if (items?.enum) items.enum = items.enum.filter(n => !hidden.has(n));
  }
  return schema;
}
