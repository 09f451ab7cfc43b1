# tradesvc: local run, tests and benchmarks on a plain Debian machine (root, no Docker).
# The logic lives in infra/local/*.sh; these targets only name it.
#
#   make run      install what is missing, start Kafka/Postgres/ClickHouse (.run/), build, migrate,
#                 (re)start `tradesvc serve`, create the demo key once, write .run/env
#                 SPLIT=1: the roles as separate processes (sim, relay, executor, projector, two gateways)
#   make stop     stop tradesvc and the run services        make clean   stop + delete .run/
#   make test     own services (.run/test/), go vet, go test -race, no-skip check, contracts, fuzz; services stopped after
#   make bench    own services; tradesvc bench against its own tradesvc serve, then every Benchmark; services stopped after
#   make contract schemathesis --checks all against a running service, and the AsyncAPI document parsed
#   make build | vet | fmt-check | services-up | services-down | services-status
#
# Kafka jars are cached outside .run (~/.cache/tradesvc, or $TRADESVC_CACHE_DIR) so `make clean` keeps them.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

LOCAL := infra/local

# The demo key's logins: the accounts of the simulator's default seed.
DEMO_LOGINS ?= 1001,1002,1003,1004,1005,1006
# Profile for services-up/-down/-status: run or test.
PROFILE ?= run
# SPLIT=1: make run starts the roles as separate processes (infra/local/split.sh).
SPLIT ?=

.PHONY: help run stop clean test bench contract build vet fmt-check go-check services-up services-down services-status

help:
	@sed -n '1,13p' Makefile | sed 's/^# \{0,1\}//'

go-check:
	@command -v go >/dev/null || { echo "Go toolchain not found: install Go (go.mod names the version)" >&2; exit 1; }

run: go-check
	@DEMO_LOGINS='$(DEMO_LOGINS)' SPLIT='$(SPLIT)' bash $(LOCAL)/run.sh

stop:
	@bash $(LOCAL)/tradesvc-proc.sh stop
	@bash $(LOCAL)/services.sh down run

clean: stop
	@bash $(LOCAL)/services.sh down test
	rm -rf .run

test: go-check
	@bash $(LOCAL)/test.sh

bench: go-check
	@bash $(LOCAL)/bench.sh

contract: go-check
	@bash $(LOCAL)/schemathesis.sh
	@bash $(LOCAL)/asyncapi.sh

build: go-check
	@mkdir -p .run/bin
	go build -o .run/bin/tradesvc ./cmd/tradesvc

vet: go-check
	go vet ./...

fmt-check: go-check
	@files=$$(find . -name '*.go' -not -path './.run/*' -not -path './.git/*' -not -path './vendor/*'); \
	out=$$( [ -z "$$files" ] || gofmt -l $$files ); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi; echo "gofmt ok"

services-up:
	@bash $(LOCAL)/services.sh up $(PROFILE)

services-down:
	@bash $(LOCAL)/services.sh down $(PROFILE)

services-status:
	@bash $(LOCAL)/services.sh status $(PROFILE)
