import {HttpErrors} from '@loopback/rest';
import type {ErrorDetail} from '../middleware/error-mapping';

/** A 422 shaped like LoopBack's own body validation errors. */
export function validationError(
  details: ErrorDetail[],
  subject = 'The request body',
): Error {
  return Object.assign(
    new HttpErrors.UnprocessableEntity(
      `${subject} is invalid. See error object \`details\` property for more info.`,
    ),
    {code: 'VALIDATION_FAILED', details},
  );
}

export function fieldError(
  field: string,
  code: string,
  message: string,
): ErrorDetail {
  return {path: `/${field}`, code, message};
}
