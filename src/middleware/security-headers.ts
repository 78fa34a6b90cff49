import type {RequestHandler} from 'express';
import helmet from 'helmet';

export interface SecurityHeaderOptions {
  /** Behind a TLS-terminating proxy: send Strict-Transport-Security. */
  trustProxy: boolean;
  /** Where the API explorer lives (its page needs inline script and style). */
  explorerPath: string;
}

const STRICT = {
  defaultSrc: ["'self'"],
  baseUri: ["'self'"],
  connectSrc: ["'self'"],
  fontSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  imgSrc: ["'self'", 'data:'],
  objectSrc: ["'none'"],
  scriptSrc: ["'self'"],
  scriptSrcAttr: ["'none'"],
  styleSrc: ["'self'"],
  upgradeInsecureRequests: null,
};

/**
 * helmet's headers on every response: nosniff, Referrer-Policy no-referrer,
 * frame denial (X-Frame-Options and frame-ancestors), and a Content-Security-
 * Policy with no inline script. The API explorer's page (LoopBack's
 * template) starts Swagger UI from an inline script and style, so its path
 * alone also allows inline ones; everything else, the console included, does
 * not. HSTS only when TRUST_PROXY says a TLS proxy is in front.
 */
export function securityHeaders(
  options: SecurityHeaderOptions,
): RequestHandler {
  const common = {
    hsts: options.trustProxy
      ? {maxAge: 180 * 24 * 60 * 60, includeSubDomains: true}
      : false,
    referrerPolicy: {policy: 'no-referrer' as const},
    frameguard: {action: 'deny' as const},
    crossOriginEmbedderPolicy: false,
  };
  const strict = helmet({
    ...common,
    contentSecurityPolicy: {useDefaults: false, directives: STRICT},
  });
  const explorer = helmet({
    ...common,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        ...STRICT,
        scriptSrc: ["'self'", "'unsafe-inline'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
      },
    },
  });
  return (request, response, next) => {
    // The explorer's own path and what lies below it, never a mere prefix
    // such as /api/explorerx.
    const path = (request.originalUrl ?? request.url).split('?')[0];
    const inExplorer =
      path === options.explorerPath ||
      path.startsWith(`${options.explorerPath.replace(/\/$/, '')}/`);
    const handler = inExplorer ? explorer : strict;
    handler(request, response, next);
  };
}
