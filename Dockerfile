# rtimewheel: a static binary on distroless, running as a non-root user.
#
#   docker build -t rtimewheel .
#   docker run --rm -p 8080:8080 rtimewheel serve --redis redis.example:6379
#
# The image listens on 0.0.0.0:8080 (RTW_LISTEN); every flag of
# `rtimewheel serve` can also be given through its RTW_ variable.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that a change of the code alone reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/rtimewheel ./cmd/rtimewheel

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/rtimewheel /usr/local/bin/rtimewheel
USER nonroot:nonroot
ENV RTW_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/rtimewheel"]
CMD ["serve"]
