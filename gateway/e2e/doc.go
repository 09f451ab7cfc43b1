// Package e2e holds the end-to-end tests and benchmarks of the REST gateway: every request
// goes over HTTPS to the whole service started in-process (apptest) against the real Kafka,
// Postgres and ClickHouse of `make test`, so quotes, accounts and bars come through the real
// pipeline (simulator → Kafka → projections → read models → gateway).
package e2e
