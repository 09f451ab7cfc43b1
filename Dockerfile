# syntax=docker/dockerfile:1
# tradesvc container image: static Go build, distroless runtime, unprivileged user.
#   docker build -t tradesvc:local .
# Used by docker-compose.yml (which also runs `tradesvc migrate` once before `tradesvc serve`).

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Module downloads are cached in their own layer: they change less often than the code.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/tradesvc ./cmd/tradesvc \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tradesvc /usr/local/bin/tradesvc
# RUN_DIR holds the generated TLS material, the master key and the simulator's data: owned by the
# runtime user so that a fresh named volume mounted here inherits that ownership.
COPY --from=build --chown=nonroot:nonroot /out/data /var/lib/tradesvc
ENV TRADESVC_RUN_DIR=/var/lib/tradesvc \
    TRADESVC_LISTEN=0.0.0.0:8443
WORKDIR /var/lib/tradesvc
USER nonroot:nonroot
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/tradesvc"]
CMD ["serve"]
