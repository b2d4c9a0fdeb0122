# clawpeer in a container: one node per container, its identity and inbox in a volume at
# /data (CLAWPEER_HOME), listening on 7700 (UDP for QUIC, TCP for the TLS fallback).
# Build: docker build -t clawpeer .    Two paired peers: see docker-compose.yml and deploy/README.md.
#
# bookworm, not alpine: the quinn QUIC binding needs glibc >= 2.34 (bookworm has 2.36), and
# the prebuilt native packages (quinn, BLAKE3, lmdb) exist for linux-x64/arm64 glibc.

# --- build: compile TypeScript, then drop dev dependencies ------------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
# `npm install`, not `npm ci`: the bindings list every platform's prebuilt package as an
# optional dependency and npm ci's lockfile check fails when the registry lacks one (README).
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bench ./bench
COPY bin ./bin
COPY scripts/bundle-cli.mjs ./scripts/
# src/ and bench/ are compiled (`clawpeer bench` loads bench/common.js); test/ is not copied.
# rootDir is "." so the output keeps the dist/src/... layout; `npm run build` then bundles the
# CLI into dist/bundle/ (esbuild, a dev dependency: it runs here, before the prune), which
# bin/clawpeer.cjs prefers.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# --- runtime ----------------------------------------------------------------------------------
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    CLAWPEER_HOME=/data \
    CLAWPEER_IDS_DIR=/ids \
    CLAWPEER_PORT=7700
# A fixed unprivileged uid, so volume ownership is stable across rebuilds. The mount points
# are created here, owned by that user: Docker seeds a new named volume from the image's
# directory, ownership included, so the non-root node can write its identity there.
RUN groupadd --gid 10001 clawpeer \
 && useradd --uid 10001 --gid clawpeer --no-create-home --home-dir /data --shell /usr/sbin/nologin clawpeer \
 && mkdir -p /data /ids \
 && chown clawpeer:clawpeer /data /ids \
 && chmod 0700 /data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY deploy/docker-entrypoint.sh /usr/local/bin/clawpeer-entrypoint
RUN chmod 0755 /app/bin/clawpeer.cjs /usr/local/bin/clawpeer-entrypoint \
 && ln -s /app/bin/clawpeer.cjs /usr/local/bin/clawpeer
USER clawpeer
VOLUME ["/data"]
EXPOSE 7700/udp 7700/tcp
# Is this node's own listener holding its port? (QUIC and TLS handshakes against itself; no
# application data, no peers dialled.)
HEALTHCHECK --interval=30s --timeout=10s --start-period=90s --retries=3 \
  CMD ["clawpeer", "doctor", "--port", "7700", "--host", "127.0.0.1", "--expect-listener", "--no-peers"]
ENTRYPOINT ["clawpeer-entrypoint"]
CMD ["listen", "--host", "0.0.0.0", "--port", "7700"]
