import type {Context} from '@loopback/core';
import type {AnyObject, DataObject, Entity, Where} from '@loopback/repository';
import type {SchemaObject} from '@loopback/rest';
import type {CurrentUser} from '../auth/current-user';
import type {Role} from '../models/user-role';

/** Which roles may call each operation; an absent operation is not offered. */
export interface CrudAccess {
  read: Role[];
  create?: Role[];
  update?: Role[];
  delete?: Role[];
}

export interface HookContext {
  user: CurrentUser;
  /** The request context, to resolve repositories and configuration. */
  context: Context;
}

/** Resource-specific rules around the generic operations. */
export interface CrudHooks<E extends Entity> {
  /** Restricts every read, update and delete to what `user` may see. */
  scope?(user: CurrentUser): Where<E> | undefined;
  /** Turns a validated create body into the row to insert (or throws 4xx). */
  beforeCreate?(body: AnyObject, ctx: HookContext): Promise<DataObject<E>>;
  /** Turns a validated patch into the change to apply (or throws 4xx). */
  beforeUpdate?(
    patch: AnyObject,
    current: E,
    ctx: HookContext,
  ): Promise<DataObject<E>>;
  /** Refuses a delete with a 4xx when the row is still needed. */
  beforeDelete?(current: E, ctx: HookContext): Promise<void>;
}

export interface BodyExtra {
  schema: SchemaObject;
  required?: boolean;
}

/** One REST resource: a model, its path, who may do what, and its hooks. */
export interface CrudResource<E extends Entity = Entity> {
  model: typeof Entity & {prototype: E};
  /** Collection path relative to the API base path, e.g. `/reports`. */
  path: string;
  access: CrudAccess;
  /** Properties the server sets: never accepted in bodies. */
  serverOwned?: string[];
  /** When given, PATCH accepts only these properties. */
  updatable?: string[];
  /** Body fields that are not model properties (e.g. a plain password). */
  createExtras?: Record<string, BodyExtra>;
  updateExtras?: Record<string, BodyExtra>;
  hooks?: CrudHooks<E>;
  /** A lower-cased text column `?q=` matches by substring (trigram-indexed). */
  searchColumn?: string;
  /** When deleting can answer 409 (the record is still used): what the 409 means. */
  deleteConflict?: string;
  /** The order of a list whose filter names none (e.g. newest first). */
  defaultOrder?: string[];
  /** Resource-specific rules, added to each operation's OpenAPI description. */
  notes?: Partial<
    Record<'find' | 'findById' | 'create' | 'updateById' | 'deleteById', string>
  >;
}

export function defineResource<E extends Entity>(
  resource: CrudResource<E>,
): CrudResource<E> {
  return resource;
}
