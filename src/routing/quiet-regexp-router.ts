import {
  createResolvedRoute,
  PathParameterValues,
  RegExpRouter,
  ResolvedRoute,
} from '@loopback/rest';

/**
 * LoopBack's RegExp router (chosen over the trie router, see application.ts)
 * without its per-request cost: its findRouteWithPathVars passes
 * `util.inspect(route, {depth: 5})` to a debug log for every route it tries,
 * evaluated even with the log switched off. On GET /api/schedulers/{id} that
 * was several percent of the API's CPU. The matching is the same: routes in
 * LoopBack's order, the first with the verb and a matching pattern wins.
 */
export class QuietRegExpRouter extends RegExpRouter {
  protected override findRouteWithPathVars(
    verb: string,
    path: string,
  ): ResolvedRoute | undefined {
    const wanted = verb.toLowerCase();
    for (const route of this.listRoutesWithPathVars()) {
      if (route.verb !== wanted) continue;
      const match = route.regexp.exec(path);
      if (!match) continue;
      const pathParams: PathParameterValues = {};
      route.keys.forEach((key, index) => {
        pathParams[key.name] = match[index + 1];
      });
      return createResolvedRoute(route, pathParams);
    }
    return undefined;
  }
}
