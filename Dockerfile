# One image for every role; APP_MODE (or the npm script) picks what it runs.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build \
  && rm -rf dist/__tests__ \
  && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
COPY --chown=node:node migrations ./migrations
COPY --chown=node:node public ./public
# Report e-mails land here as .eml files while SMTP_URL is unset (mount a volume to keep them).
RUN mkdir -p var/mail-outbox && chown -R node:node var
USER node
EXPOSE 3000
CMD ["node", "dist/index.js"]
