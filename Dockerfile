# askbridge: one static binary on a distroless base, running as non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git stays out of the image's context: name the commit for 'askbridge version'
# with --build-arg COMMIT=$(git rev-parse HEAD).
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/askbridge/askbridge/internal/version.Commit=${COMMIT}" -o /out/askbridge ./cmd/askbridge \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/askbridge /askbridge
COPY --from=build --chown=65532:65532 /out/data /data
# The embedded NATS listens on every interface for agents in other
# containers, and admits only credentials made with `askbridge creds`.
ENV ASK_DATA_DIR=/data \
    ASK_HTTP_ADDR=:8080 \
    ASK_NATS_LISTEN=0.0.0.0:4222
VOLUME /data
EXPOSE 8080 4222
USER 65532:65532
ENTRYPOINT ["/askbridge"]
CMD ["serve"]
