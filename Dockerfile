# The worker image: `sandboxctl worker` on Node 20, run as the unprivileged `node` user.
# docker-compose.yml builds it (`docker compose build worker`); docs/deploy.md explains
# how to run it. Base images are pinned to a full version; pin them by digest as well
# (`node:20.20.2-bookworm-slim@sha256:...`) once you have pulled them.

FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
# A toolchain for native modules (better-sqlite3) in case no prebuilt binary fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20.20.2-bookworm-slim
# Two malloc arenas: the worker's native threads otherwise keep freed memory in arenas of their own (docs/performance.md, P5).
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    SANDBOXPLANE_DB=/data/sandboxplane.sqlite
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The projection lives on a volume; a named volume takes this directory's owner.
RUN mkdir -p /data /snapshots && chown node:node /data /snapshots
VOLUME ["/data", "/snapshots"]
USER node
ENTRYPOINT ["node", "bin/sandboxctl.js"]
CMD ["worker"]
