/**
 * What most operations accept: an API key (`Bearer tsk_…`) or the login's
 * JWT. The key strategy goes first and passes on anything that is not a
 * `tsk_` bearer, so a refused key answers with its own 401.
 */
export const BEARER_STRATEGIES = ['api-key', 'jwt'];
