import express from 'express';
import {existsSync} from 'node:fs';
import path from 'node:path';

/** Angular's hashed output names: `main-G3NZQVKL.js`, `styles-VUJJHKPS.css`. */
const HASHED_ASSET = /-[A-Z0-9]{8}\.(?:js|css)$/;
const ONE_YEAR_SECONDS = 365 * 24 * 60 * 60;

/**
 * The operations console (the Angular build in `dist/console/browser`):
 * hashed assets are cached for a year (a new build has new names), everything
 * else, index.html above all, is revalidated on every load so a deployment
 * shows at once. A GET for a path without a file extension outside /api is a
 * deep link into the app (`/schedulers/12`) and gets index.html; a missing
 * file (`/nope.js`) and everything under /api fall through to the JSON 404.
 */
export function consoleStatic(consoleDir: string): express.RequestHandler {
  const indexFile = path.join(consoleDir, 'index.html');
  const files = express.static(consoleDir, {
    index: 'index.html',
    redirect: false,
    setHeaders: (response, filePath) => {
      response.setHeader(
        'Cache-Control',
        HASHED_ASSET.test(path.basename(filePath))
          ? `public, max-age=${ONE_YEAR_SECONDS}, immutable`
          : 'no-cache',
      );
    },
  });
  const router = express.Router();
  router.use(files);
  router.use((request, response, next) => {
    const isPage =
      (request.method === 'GET' || request.method === 'HEAD') &&
      !/^\/api(?:\/|$)/.test(request.path) &&
      !path.posix.basename(request.path).includes('.');
    if (!isPage || !existsSync(indexFile)) return next();
    response.setHeader('Cache-Control', 'no-cache');
    response.sendFile(indexFile, error => {
      if (error) next(error);
    });
  });
  return router;
}
