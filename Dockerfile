# baton's server image: `baton serve` on port 3000, its data (SQLite file, local workspaces) in /data.
#
#   docker build -t baton .
#   docker run -p 3000:3000 -v baton-data:/data baton            # SQLite, local workspaces
#   docker compose up                                            # with PostgreSQL, see compose.yaml
#
# The entrypoint is the `baton` bin, so `docker run baton migrate` or `baton config check` work too.
# Runtime dependencies only: TypeScript, vitest, the benchmark peers and the Claude Code CLI are
# devDependencies and never reach this image (see "Dependencies" in docs/development.md).

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: compile TypeScript to dist/ ---------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the sources are not here yet for `prepare`, and tsc needs no native addon.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---- production dependencies: `npm ci --omit=dev`, native addon compiled ---------------------------
FROM ${NODE_IMAGE} AS prod-deps
# better-sqlite3 downloads a prebuilt addon, or compiles it with these when it cannot.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own `prepare` runs tsc, a devDependency that --omit=dev leaves
# out; the one dependency with an install step (better-sqlite3) is then built on its own.
# npm_config_nodedir: node-gyp uses the image's Node headers instead of downloading them.
# The addon's sources and object files are only needed to compile it.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm_config_nodedir=/usr/local npm rebuild better-sqlite3 \
 && rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/build/Release/obj* node_modules/better-sqlite3/build/Release/.deps \
 && npm cache clean --force

# ---- runtime ----------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini: PID 1 that forwards SIGTERM to baton (which drains and stops its runners) and reaps the
# runners' orphaned children. git: local workspaces clone with it. bubblewrap: the local provider's
# sandbox (needs unprivileged user namespaces where the container runs).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini git ca-certificates openssh-client bubblewrap \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY assets ./assets

# /data belongs to the unprivileged `node` user (uid 1000) of the base image.
RUN mkdir -p /data && chown 1000:1000 /data
VOLUME /data

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    BATON_DATA_DIR=/data \
    DATABASE_URL=sqlite:/data/baton.db

# Numeric, so Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 1000:1000
EXPOSE 3000

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/bin/baton.js"]
CMD ["serve"]
