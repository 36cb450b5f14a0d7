# Vitrine in a container: `docker build -t vitrine .`, then
#   docker run -d -p 7480:7480 -v vitrine-data:/var/lib/vitrine \
#     -v "$PWD/vitrine.toml:/etc/vitrine/vitrine.toml:ro" vitrine \
#     serve --config /etc/vitrine/vitrine.toml
# (without --config it serves the embedded demo account).

# Build: the release binary, from the workspace.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p vitrine-http --bin vitrine \
 && install -m 755 target/release/vitrine /vitrine

# Run: a small Debian with the binary alone, as a dedicated user.
FROM debian:bookworm-slim
RUN groupadd --system --gid 10001 vitrine \
 && useradd --system --uid 10001 --gid vitrine --home-dir /var/lib/vitrine --shell /usr/sbin/nologin vitrine \
 && install -d -o vitrine -g vitrine -m 750 /var/lib/vitrine \
 && install -d -m 755 /etc/vitrine
COPY --from=build /vitrine /usr/local/bin/vitrine
USER vitrine
ENV VITRINE_LISTEN=0.0.0.0:7480 \
    VITRINE_DATA_DIR=/var/lib/vitrine \
    VITRINE_LOG_FORMAT=json
VOLUME ["/var/lib/vitrine"]
EXPOSE 7480
# Stopped with SIGTERM: Vitrine syncs what it acknowledged and exits.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=10m --retries=3 \
  CMD ["/usr/local/bin/vitrine", "health", "--url", "http://127.0.0.1:7480/healthz"]
ENTRYPOINT ["/usr/local/bin/vitrine"]
CMD ["serve"]
