# syntax=docker/dockerfile:1
# One image for every role; the command picks it:
#   npm run start:api | start:scheduler | start:worker | start:stay-alive
# (the scripts exec node, so SIGTERM reaches the service and it exits 0).

# Build with the dev dependencies (TypeScript and friends).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# The operations console (Angular) builds into dist/console with the service.
COPY client ./client
COPY console ./console
RUN npm run build && rm -rf dist/__tests__

# Production dependencies only, installed from the same lock file.
FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts \
  && npm cache clean --force

# The slim runtime: compiled code, production modules, migrations, workers.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    HEALTH_PORT=8081 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false
WORKDIR /app
# Owned by root and only readable by the service user: it cannot change its own code.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json package-lock.json ./
COPY migrations ./migrations
COPY scripts/workers ./scripts/workers
# Report e-mails land here as .eml files while SMTP_URL is unset (mount a volume to keep them).
RUN mkdir -p var/mail-outbox && chown -R node:node var
USER node
EXPOSE 3000 8081
# Asks GET /api/ready on HEALTH_PORT (or PORT): node only, no curl in the image.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["node", "dist/healthcheck.js"]
CMD ["npm", "run", "--silent", "start:api"]
