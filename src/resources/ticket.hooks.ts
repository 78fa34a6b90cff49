import type {DataObject} from '@loopback/repository';
import {HttpErrors} from '@loopback/rest';
import type {CurrentUser} from '../auth/current-user';
import type {CrudHooks} from '../crud/crud-resource';
import type {Ticket} from '../models';

/** Only the owner or an admin changes a ticket; everyone may read them all. */
function assertMayChange(ticket: Ticket, user: CurrentUser): void {
  if (user.role === 'admin' || ticket.user_id === user.id) return;
  throw new HttpErrors.Forbidden(
    "Only the ticket's owner or an admin may change or delete it",
  );
}

export const ticketHooks: CrudHooks<Ticket> = {
  beforeCreate: async (body, ctx) =>
    ({...body, user_id: ctx.user.id}) as DataObject<Ticket>,
  beforeUpdate: async (patch, current, ctx) => {
    assertMayChange(current, ctx.user);
    return patch as DataObject<Ticket>;
  },
  beforeDelete: async (current, ctx) => assertMayChange(current, ctx.user),
};
